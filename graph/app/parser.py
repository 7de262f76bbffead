"""The ``replangraph`` command line: its subcommands, flags and help."""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from replangraph.app.feature_cli import add_feature_flags, answer_help, feature_flags
from replangraph.app.flags import positive_int
from replangraph.config import AgentConfig

DESCRIPTION = (
    "Plan a goal into a queue of subtasks and run it. Commands: demo (offline, scripted), run GOAL (a real model, "
    "every step checkpointed), resume (go on with a stopped run, answer its questions), worker (serve runs on a "
    "Temporal server), graph (the graph as mermaid), bench (the benchmarks of a source checkout)."
)

OUTPUT_HELP = (
    "Output: on a terminal with rich installed (pip install 'replangraph[cli]'), a live view of the queue "
    "(status of each subtask, handed-off work under its parent, the tool call in flight, steps and tokens used); "
    "elsewhere one plain line per event. --json writes one JSON object per line on stdout and nothing else "
    "(notes, and what tools print, go to stderr; questions are never asked inline): each stream event as the "
    'graph emits it ({"event": "plan_created", ...}, "step_started", "step_completed", "plan_completed", ...), '
    'then one object saying how the command ended: {"event": "run_finished", "exit_code", "final_answer", '
    '"counts", "steps", "tokens" (reported by the model during this command; null when it reported none), '
    '"thread"}; {"event": "waiting", "exit_code": 3, "interrupts", "resume"} (the command that answers them); '
    '{"event": "command_done", "exit_code": 0, "run_ended", "resume"} after a slash command such as /status '
    'sent as the goal or an answer; {"event": "stopped", "exit_code", "reason", "resume"} (Ctrl-C, or a run that '
    'stopped early); or {"event": "error", "exit_code", "message"} (exit code 2, bad arguments included, 4 or 6). '
    'Before its events, run (and a resume that goes on with a run) writes {"event": "run_started", "thread", '
    '"resume"}. '
    "Values JSON cannot hold are written as strings."
)

EXIT_HELP = (
    "Exit codes: 0 every subtask completed and the model wrote the final answer; 1 the run ended with the "
    "fallback report (failed, skipped or cancelled, or the final answer could not be written); 2 usage, model or "
    "database error; 3 waiting for an answer; 4 the model server did not answer (before the run; or during it: "
    "the run is paused, resume it once the server is back), or the Temporal server did not; 5 the run stopped on an "
    "unexpected error (traceback saved to a file; resume once fixed); 6 another process is running the thread "
    "(nothing ran) or took it over (the run stopped after its step); 130 stopped with Ctrl-C (on Temporal the "
    "run goes on; resume --temporal follows it again); 141 the reader of the output went away (| head)."
)


MODEL_DEFAULT = "$REPLANGRAPH_MODEL, else with a base URL the one model its server lists, else gpt-4o-mini"


class ParagraphFormatter(argparse.HelpFormatter):
    """Wraps each paragraph of a description or epilog on its own (the default joins them)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n\n".join(super(ParagraphFormatter, self)._fill_text(p, width, indent) for p in text.split("\n\n"))


class ArgumentsRefused(SystemExit):
    """What `Parser.error` raises: the usage and ``message`` are on stderr already; exit code 2."""

    def __init__(self, message: str):
        super().__init__(2)
        self.message = message


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose refusal keeps its message (`ArgumentsRefused`), so ``--json`` can report it."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr, flush=True)
        raise ArgumentsRefused(message)


def add_db_flags(parser: argparse.ArgumentParser, thread_help: str, thread_required: bool) -> None:
    from replangraph.durable import DB_ENV, default_db_path  # loaded when the command runs: the CLI starts fast

    parser.add_argument(
        "--db",
        default=None,
        metavar="PATH_OR_URL",
        help=f"SQLite file or postgresql:// URL that keeps the run's checkpoints "
        f"(default: ${DB_ENV}, else {default_db_path()})",
    )
    parser.add_argument("--thread", required=thread_required, metavar="ID", help=thread_help)


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="write one JSON object per event per line on stdout, notes on stderr, and never ask inline "
        "(see the format in `replangraph --help`)",
    )


def add_model_flags(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument(
        "--model",
        default=None,
        help=f"model name (default: {default(MODEL_DEFAULT)})",
    )
    parser.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help=f"OpenAI-compatible server, e.g. http://localhost:8000/v1 (same as $OPENAI_BASE_URL; default: "
        f"{default('$OPENAI_BASE_URL, else OpenAI')}); it is asked for GET /models first, and a server that "
        "does not answer ends the command with exit code 4",
    )


def add_run_flags(parser: argparse.ArgumentParser, resume: bool, model: bool = True) -> None:
    """The flags the graph is built from; on ``resume`` each defaults to what the run recorded. A flag not given
    reads None (`settings.chosen_settings` fills in the default its help names), so what was given is known."""
    config = AgentConfig()

    def default(text: str) -> str:
        return f"what the run was started with, else {text}" if resume else text

    if model:
        add_model_flags(parser, default)
    parser.add_argument(
        "--tools",
        action="append",
        default=None,
        metavar="MODULE:ATTR",
        help=f"tools to give the agents: a tool, a function or a list of them; repeat for more "
        f"(default: {default('none')})",
    )
    parser.add_argument(
        "--agents",
        default=None,
        metavar="MODULE:ATTR",
        help="agent types to plan with: a dict of name to AgentProfile, and to Team for several agent types "
        f"that each run a subtask and keep one result (default: {default('one general-purpose agent')})",
    )
    parser.add_argument(
        "--max-steps",
        type=positive_int,
        default=None,
        metavar="N",
        help=f"budget of model calls for the whole run (default: {default(str(config.max_steps))})",
    )
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        default=None,
        metavar="N",
        help=f"subtasks and tool calls that may run at once (default: {default(str(config.max_concurrency))})",
    )
    parser.add_argument(
        "--context-window",
        type=positive_int,
        default=None,
        metavar="N",
        help=f"input tokens the model accepts, as the server was started with (e.g. llama.cpp's --n_ctx); "
        f"learned from the server's errors otherwise (default: {default('the model profile, else 200,000')})",
    )
    parser.add_argument(
        "--max-output-tokens",
        type=positive_int,
        default=None,
        metavar="N",
        help=f"most tokens one model answer may take, sent with every call (default: "
        f"{default('the reserved output, 8000')})",
    )
    add_feature_flags(parser, default, resume)  # each feature's own (its folder's cli.py)


TASK_QUEUE = "replangraph"
"""`replangraph.temporal.TASK_QUEUE`, which needs the temporal extra to import."""


TEMPORAL_HELP = "the Temporal server's address, e.g. 127.0.0.1:7233 (`temporal server start-dev` starts one)"


def add_temporal_flags(
    parser: argparse.ArgumentParser, required: bool, address_help: str = TEMPORAL_HELP, task_queue: bool = True
) -> None:
    parser.add_argument("--temporal", required=required, default=None, metavar="HOST:PORT", help=address_help)
    parser.add_argument(
        "--payloads",
        default=None,
        metavar="FOLDER|URL",
        help="with --temporal: where payloads over 4 KiB are kept, by reference (a folder every worker and client "
        "reads, or a postgresql:// URL); the same for every worker and client of a run (default: "
        "$REPLANGRAPH_PAYLOADS, else ~/.cache/replangraph/temporal-payloads)",
    )
    parser.add_argument(
        "--codec",
        default=None,
        metavar="MODULE:ATTR",
        help="with --temporal: a Temporal payload codec (temporalio.converter.PayloadCodec, or its class) that "
        "encodes every payload the server and the payload store keep, e.g. to encrypt them; the same for every "
        "worker and client of a run",
    )
    if task_queue:
        parser.add_argument(
            "--task-queue",
            default=TASK_QUEUE,
            metavar="NAME",
            help=f"the Temporal task queue the workers serve (default: {TASK_QUEUE})",
        )


def make_parser() -> Parser:
    parser = Parser(
        prog="replangraph",
        description=DESCRIPTION,
        formatter_class=ParagraphFormatter,
        epilog=f"{OUTPUT_HELP}\n\n{EXIT_HELP}",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo",
        formatter_class=ParagraphFormatter,
        help="run the bundled offline scenario with a scripted model",
        description="Run the bundled scenario offline: a scripted chat model, no LLM is called.",
        epilog=OUTPUT_HELP,
    )
    add_json_flag(demo)
    run = sub.add_parser(
        "run",
        formatter_class=ParagraphFormatter,
        help="run a goal with a real model (ChatOpenAI), checkpointing every step",
        description="Run GOAL with a real model. Every step is checkpointed on a thread, so a stopped, crashed or "
        "paused run goes on with `replangraph resume --thread ID`. Questions are asked inline on a terminal; "
        "elsewhere the command exits with code 3 and prints the resume command that answers them. With "
        "--temporal HOST:PORT the run is a Temporal workflow that `replangraph worker` processes serve, followed "
        "here the same way (the tokens count stays null: the workers call the model).",
        epilog=f"{OUTPUT_HELP}\n\n{EXIT_HELP}",
    )
    run.add_argument("goal", help="what the agent should do")
    add_db_flags(run, "thread id to run on (default: a new short id, printed at the start)", thread_required=False)
    add_run_flags(run, resume=False)
    add_json_flag(run)
    add_temporal_flags(
        run,
        required=False,
        address_help="run on the Temporal server at HOST:PORT (e.g. 127.0.0.1:7233) as a workflow whose id is the "
        "thread id, served by `replangraph worker` processes: they build the graph from their own flags (--model, "
        "--base-url, --tools, --agents, which run then refuses, as it does --db), and no model or key is needed "
        "here; the limits and checks given here (--max-steps, --concurrency, --max-output-tokens, "
        f"--context-window, {', '.join(flag.option for flag in feature_flags())}) go with the run, over the "
        "workers' own. Ctrl-C stops following, not the run",
    )
    resume = sub.add_parser(
        "resume",
        formatter_class=ParagraphFormatter,
        help="go on with a stopped run: answer its questions or run the work it has left",
        description="Go on with the run on a thread: answer what it waits for (--answer, else inline on a "
        "terminal), run the work a stopped or crashed run has left, or show how an ended run ended. "
        "The model and tool settings default to those the run was started with. With --temporal HOST:PORT it "
        "follows the run on Temporal again from where it is now (answers go to it; a slash command given as "
        "an answer is sent to it).",
        epilog=f"{OUTPUT_HELP}\n\n{EXIT_HELP}",
    )
    add_db_flags(resume, "thread id of the run (printed when it started)", thread_required=True)
    resume.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="TEXT",
        help="an answer to what the run waits for, one per pause in the order listed"
        + (f" ({answer_help()})" if answer_help() else ""),
    )
    add_run_flags(resume, resume=True)
    add_json_flag(resume)
    add_temporal_flags(
        resume,
        required=False,
        task_queue=False,
        address_help="the run is on the Temporal server at HOST:PORT (started with run --temporal): follow it "
        "again, answer what it waits for, or show how it ended; its settings were fixed when it started, so the "
        "flags above are refused, --db too",
    )
    worker = sub.add_parser(
        "worker",
        formatter_class=ParagraphFormatter,
        help="serve runs on a Temporal server: the graph `run` builds, its steps and tool calls as activities",
        description="Serve a task queue of a Temporal server with the graph that `replangraph run` builds from these "
        "flags: the runs started there (the workflow) and their nodes' and tool calls' activities. Start any number, "
        "on any machines, with the same flags: the work spreads over them, and the work of one that dies goes on in "
        'another. Needs the temporal extra (pip install "replangraph[temporal]"). Runs until Ctrl-C.',
    )
    add_temporal_flags(worker, required=True)
    worker.add_argument(
        "--demo",
        action="store_true",
        help="serve the demo's graph: its scripted chat model (no LLM is called) and its catalogue tool, "
        'read_ranking; try it with: replangraph run --temporal HOST:PORT "Rank the top 19 products of the catalog"',
    )
    add_run_flags(worker, resume=False)
    graph = sub.add_parser(
        "graph",
        formatter_class=ParagraphFormatter,
        help="print the graph `run` builds, as mermaid (no model is called, no key needed)",
        description="Print the graph that `replangraph run` builds with these flags, as a mermaid flowchart "
        "(paste it into a Markdown file or https://mermaid.live). No model is called: a placeholder stands in.",
    )
    add_run_flags(graph, resume=False, model=False)
    output = sub.add_parser(
        "output",
        formatter_class=ParagraphFormatter,
        help="print an output a run kept: a subtask's result, or what a failed subtask had seen",
        description="Print the whole text a run kept under OUTPUT_ID: a subtask's result (2/result), what a "
        "failed subtask had seen and written (2/window-at-failure), a long tool output or folded history the "
        "report or a note names. Without OUTPUT_ID, list the ids the run kept.",
    )
    add_db_flags(output, "thread id of the run (printed when it started)", thread_required=True)
    output.add_argument("output_id", nargs="?", default=None, metavar="OUTPUT_ID", help="the id of the output")
    add_temporal_flags(
        output,
        required=False,
        task_queue=False,
        address_help="the run is on the Temporal server at HOST:PORT (started with run --temporal): read what it "
        "kept there, while it works or once it ended",
    )
    bench = sub.add_parser(
        "bench",
        formatter_class=ParagraphFormatter,
        help="compare agents on any endpoint, or run a benchmark of a source checkout: python -m benchmarks NAME",
        description="Run `python -m benchmarks NAME [options]` from the replangraph source checkout (the "
        "current folder, else the one the package was installed from in editable mode), passing the arguments "
        "through. Without NAME it runs the comparison (`compare`): replangraph beside ReAct, ReAct with a todo "
        "list and deepagents (when installed) on TextCraft and a wide list-collection world, e.g. replangraph "
        "bench --base-url http://127.0.0.1:8080/v1 --model NAME; it prints one table per world and writes a "
        "JSON result file (bench-results/). Benchmarks: compare, textcraft, wide, personas, context, engine, "
        "teams, faults, splits, temporal; `replangraph bench NAME --help` lists a benchmark's options, and --quick "
        "runs most in seconds.",
    )
    bench.add_argument(
        "args",
        nargs=argparse.REMAINDER,
        metavar="[NAME] [options]",
        help="the benchmark and its options, passed to python -m benchmarks (no NAME: compare)",
    )
    return parser
