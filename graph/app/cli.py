"""Console script: ``replangraph demo`` (offline, scripted), ``replangraph run "GOAL"`` (a real model, every
step checkpointed) and ``replangraph resume --thread ID`` (go on with a stopped run, answer its questions)."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import uuid
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, TextIO

from replangraph.commands import RESUME
from replangraph.config import AgentConfig

from .console import (
    EXIT_USAGE,
    say,
    watch,
)
from .session import (
    CANCEL_WORD,
    NO_INPUT,
    SETTINGS_KEY,
    Session,
    db_label,
    is_cancel_word,
    slash_text,
    work_left,
)

MISSING_MODEL = (
    "replangraph {command} needs a model: set OPENAI_API_KEY (and optionally OPENAI_BASE_URL or --base-url for an "
    "OpenAI-compatible server such as vLLM, Ollama or llama.cpp). Try `replangraph demo` to run offline."
)


class UsageError(Exception):
    """Ends the command with its message on stderr and exit code 2."""


def run_demo(out: TextIO) -> int:
    """The bundled scripted scenario; exit code 0 when all products reach the final answer."""
    from replangraph.app.demo import DEMO_GOAL, build_demo_graph, expected_products

    print("replangraph demo: SCRIPTED chat model, no LLM is called.", file=out, flush=True)
    print("The scripted worker reads 5 products per subtask and hands the rest off.\n", file=out, flush=True)
    print(f"Goal: {DEMO_GOAL}\n", file=out, flush=True)
    graph = build_demo_graph()
    state = watch(graph, {"messages": [("user", DEMO_GOAL)]}, {"configurable": {"thread_id": "demo"}}, out)
    answer = state.get("final_answer", "")
    print(f"\nFinal answer:\n{answer}\n", file=out, flush=True)
    wanted = expected_products(19)
    found = sum(name in answer for name in wanted)
    print(f"Check: {found}/{len(wanted)} products in the final answer.", file=out, flush=True)
    return 0 if found == len(wanted) else 1


def load_tools(specs: list[str]) -> list:
    """Tools named ``module:attr`` (a tool, a function, or a list of them); a bad spec is a UsageError."""
    from replangraph.app.studio import load_tools as load

    try:
        return load(specs, "tools")
    except ValueError as exc:
        raise UsageError(str(exc)) from None


# Settings: what the graph is built from. `run` records them in each checkpoint's metadata and `resume`
# reads them back, so `replangraph resume --thread ID` needs none of the flags the run was started with.

DEFAULTS: dict[str, Any] = {
    "model": None,
    "base_url": None,
    "tools": [],
    "max_steps": AgentConfig().max_steps,
    "concurrency": AgentConfig().max_concurrency,
    "verify": False,
    "approve_plan": False,
    "max_clarifications": AgentConfig().max_clarifications,
}


def chosen_settings(args: argparse.Namespace, recorded: Mapping[str, Any]) -> dict[str, Any]:
    """Each setting from its flag when given, else as the run recorded it, else its default."""
    settings = {}
    for name, default in DEFAULTS.items():
        given = getattr(args, name, None)
        settings[name] = given if given not in (None, []) else recorded.get(name, default)
    return settings


def recorded_settings(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The settings a CLI run recorded in a checkpoint's metadata ({} for a thread started elsewhere)."""
    try:
        found = json.loads((metadata or {}).get(SETTINGS_KEY) or "{}")
    except (TypeError, ValueError):
        return {}
    return {k: v for k, v in found.items() if k in DEFAULTS} if isinstance(found, dict) else {}


def agent_config(settings: Mapping[str, Any]) -> AgentConfig:
    return AgentConfig(
        max_steps=settings["max_steps"],
        max_concurrency=settings["concurrency"],
        verify_results=settings["verify"],
        approve_plan=settings["approve_plan"],
        max_clarifications=settings["max_clarifications"],
    )


def model_missing(settings: Mapping[str, Any]) -> bool:
    return not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL") or settings.get("base_url"))


@contextmanager
def base_url_env(url: str | None) -> Iterator[None]:
    """``--base-url`` works as OPENAI_BASE_URL does, for the duration of the command."""
    if not url:
        yield
        return
    before = os.environ.get("OPENAI_BASE_URL")
    os.environ["OPENAI_BASE_URL"] = url
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("OPENAI_BASE_URL", None)
        else:
            os.environ["OPENAI_BASE_URL"] = before


def build(settings: Mapping[str, Any], checkpointer: Any, store: Any) -> Any:
    from replangraph.app.studio import chat_model_from_env
    from replangraph.builder import build_graph

    return build_graph(
        chat_model_from_env(settings["model"]),
        tools=load_tools(list(settings["tools"])),
        config=agent_config(settings),
        checkpointer=checkpointer,
        store=store,
    )


# The database


def chosen_db(db: str | None) -> str | Path:
    """``--db``, else $REPLANGRAPH_DB (a path or a PostgreSQL URL), else the default SQLite file."""
    from replangraph.durable import DB_ENV, default_db_path

    return db or os.environ.get(DB_ENV) or default_db_path()


def open_db(stack: ExitStack, db: str | Path, *, must_exist: bool = False) -> tuple[Any, Any]:
    """``(checkpointer, store)`` on ``db``, closed with ``stack``; a database that cannot be opened is a UsageError."""
    from replangraph.durable import is_postgres_url, open_saver

    if must_exist and not is_postgres_url(db) and not Path(db).expanduser().is_file():
        raise UsageError(f"There is no run to resume here: the database {db} does not exist.")
    try:
        return stack.enter_context(open_saver(db))
    except ConnectionError as exc:  # its message names the server already
        raise UsageError(str(exc)) from None
    except (OSError, RuntimeError, ValueError, sqlite3.Error) as exc:
        raise UsageError(f"Cannot open the database {db_label(db)}: {exc}") from None


# Commands


def run_goal(goal: str, args: argparse.Namespace, out: TextIO) -> int:
    """Run a real model through ChatOpenAI (any OpenAI-compatible server via --base-url or OPENAI_BASE_URL),
    checkpointing every step on the thread."""
    settings = chosen_settings(args, {})
    if not goal.strip():
        raise UsageError('replangraph run needs a goal: say what the agent should do, e.g. replangraph run "..."')
    if model_missing(settings):
        raise UsageError(MISSING_MODEL.format(command="run"))
    thread = args.thread or uuid.uuid4().hex[:8]
    command = goal.strip() if slash_text(goal) or is_cancel_word(goal) else None  # e.g. `--thread ID /status`
    with base_url_env(settings["base_url"]), ExitStack() as stack:
        checkpointer, store = open_db(stack, chosen_db(args.db))
        session = Session(build(settings, checkpointer, store), thread, settings, args.db, out)
        say(out, f"thread: {thread} (resume with: {session.resume_command()})")
        return session.guarded({"messages": [("user", goal)]}, command)


def resume_thread(args: argparse.Namespace, out: TextIO) -> int:
    """Go on with the run on ``--thread``: answer what it waits for, run the work it has left, or show how it ended."""
    from replangraph.commands import unfinished

    db = chosen_db(args.db)
    with ExitStack() as stack:
        checkpointer, store = open_db(stack, db, must_exist=True)
        saved = checkpointer.get_tuple({"configurable": {"thread_id": args.thread, "checkpoint_ns": ""}})
        if saved is None:
            raise UsageError(f"There is no run with thread id {args.thread!r} in {db_label(db)}.")
        settings = chosen_settings(args, recorded_settings(saved.metadata))
        stack.enter_context(base_url_env(settings["base_url"]))
        # The state is read without the run's tools: showing a run that ended needs none of them.
        viewer = Session(build({**settings, "tools": []}, checkpointer, store), args.thread, settings, args.db, out)
        viewer.answers = list(args.answer or [])
        snapshot = viewer.graph.get_state(viewer.config)
        # Work left in the checkpoint goes on from it. A run that stopped between steps and then got new input (a
        # command) has none there, as LangGraph dropped the waiting steps: the graph's /resume picks it up.
        stopped = not snapshot.interrupts and not work_left(snapshot) and unfinished(snapshot.values)
        if not snapshot.interrupts and not work_left(snapshot) and not stopped:
            say(out, f"The run on thread {args.thread} had already ended.")
            if viewer.answers:
                say(out, "Nothing was waiting for an answer, so --answer was not used.")
            return viewer.finish(snapshot.values)
        if model_missing(settings):
            raise UsageError(MISSING_MODEL.format(command="resume"))
        session = Session(build(settings, checkpointer, store), args.thread, settings, args.db, out)
        session.answers = viewer.answers
        waits = f", {len(snapshot.interrupts)} answer(s) waited for" if snapshot.interrupts else ""
        say(out, f"thread: {args.thread} (resuming{waits})")
        if stopped:
            return session.guarded({"messages": [("user", RESUME)]}, RESUME)
        return session.guarded(NO_INPUT if snapshot.interrupts else None)


# The parser


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def add_db_flags(parser: argparse.ArgumentParser, thread_help: str, thread_required: bool) -> None:
    from replangraph.durable import DB_ENV, default_db_path

    parser.add_argument(
        "--db",
        default=None,
        metavar="PATH_OR_URL",
        help=f"SQLite file or postgresql:// URL that keeps the run's checkpoints "
        f"(default: ${DB_ENV}, else {default_db_path()})",
    )
    parser.add_argument("--thread", required=thread_required, metavar="ID", help=thread_help)


def add_run_flags(parser: argparse.ArgumentParser, resume: bool) -> None:
    """The flags the graph is built from; on ``resume`` each defaults to what the run recorded."""
    config = AgentConfig()

    def default(text: str) -> str:
        return f"what the run was started with, else {text}" if resume else text

    def value(given: Any) -> Any:
        return None if resume else given

    parser.add_argument(
        "--model", default=None, help=f"model name (default: {default('$REPLANGRAPH_MODEL, else gpt-4o-mini')})"
    )
    parser.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help=f"OpenAI-compatible server, e.g. http://localhost:8000/v1 (same as $OPENAI_BASE_URL; default: "
        f"{default('$OPENAI_BASE_URL, else OpenAI')})",
    )
    parser.add_argument(
        "--tools",
        action="append",
        default=value([]),
        metavar="MODULE:ATTR",
        help=f"tools to give the agents: a tool, a function or a list of them; repeat for more "
        f"(default: {default('none')})",
    )
    parser.add_argument(
        "--max-steps",
        type=positive_int,
        default=value(config.max_steps),
        help=f"budget of model calls for the whole run (default: {default(str(config.max_steps))})",
    )
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        default=value(config.max_concurrency),
        help=f"subtasks that may run at the same time (default: {default(str(config.max_concurrency))})",
    )
    parser.add_argument(
        "--max-clarifications",
        type=non_negative_int,
        default=value(config.max_clarifications),
        metavar="N",
        help=f"questions one subtask may ask you; 0: agents cannot ask (default: "
        f"{default(str(config.max_clarifications))})",
    )
    flag = argparse.BooleanOptionalAction if resume else "store_true"
    parser.add_argument(
        "--verify",
        action=flag,
        default=value(False),
        help=f"check each result and queue what is missing (default: {default('off')})",
    )
    parser.add_argument(
        "--approve-plan",
        action=flag,
        default=value(False),
        help=f"pause after planning until you approve, edit or cancel the plan (default: {default('off')})",
    )


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="replangraph",
        description=__doc__,
        epilog="Exit codes: 0 every subtask completed; 1 the run ended with the fallback report (failed, skipped "
        "or cancelled); 2 usage, model or database error; 3 waiting for an answer; 130 stopped with Ctrl-C.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run the bundled offline scenario with a scripted model")
    run = sub.add_parser(
        "run",
        help="run a goal with a real model (ChatOpenAI), checkpointing every step",
        description="Run GOAL with a real model. Every step is checkpointed on a thread, so a stopped, crashed or "
        "paused run goes on with `replangraph resume --thread ID`. Questions are asked inline on a terminal; "
        "elsewhere the command exits with code 3 and prints the resume command that answers them.",
    )
    run.add_argument("goal", help="what the agent should do")
    add_db_flags(run, "thread id to run on (default: a new short id, printed at the start)", thread_required=False)
    add_run_flags(run, resume=False)
    resume = sub.add_parser(
        "resume",
        help="go on with a stopped run: answer its questions or run the work it has left",
        description="Go on with the run on a thread: answer what it waits for (--answer, else inline on a "
        "terminal), run the work a stopped or crashed run has left, or show how an ended run ended. "
        "The model and tool settings default to those the run was started with.",
    )
    add_db_flags(resume, "thread id of the run (printed when it started)", thread_required=True)
    resume.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="TEXT",
        help="an answer to a waiting question or plan, one per question in the order listed (for a plan: "
        f"approve, the task list edited as JSON, or {CANCEL_WORD}); a slash command such as /status is sent as "
        "input and answered",
    )
    add_run_flags(resume, resume=True)
    return parser


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    """Entry point of the ``replangraph`` console script."""
    out = out or sys.stdout
    args = make_parser().parse_args(argv)
    try:
        if args.command == "demo":
            return run_demo(out)
        if args.command == "resume":
            return resume_thread(args, out)
        return run_goal(args.goal, args, out)
    except UsageError as error:
        print(error, file=sys.stderr, flush=True)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
