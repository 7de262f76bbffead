"""The ``replangraph`` console script: `main` runs the command `parser.make_parser` reads (its help says what
each does) and turns what can go wrong into a sentence and an exit code (`console`)."""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any, NoReturn, TextIO

from replangraph.app.console import (
    EXIT_BUSY,
    EXIT_CONNECTION,
    EXIT_DONE,
    EXIT_INTERRUPTED,
    EXIT_PIPE,
    EXIT_REPORT,
    EXIT_USAGE,
    JsonOutput,
    Output,
    PlainOutput,
    is_tty,
    json_line,
    run_finished,
    say,
)
from replangraph.app.feature_cli import cancels, command_in
from replangraph.app.loading import UsageError, load_agents, load_spec, load_tools
from replangraph.app.parser import ArgumentsRefused, make_parser
from replangraph.app.server import NoModel, ServerDown, check_server
from replangraph.app.session import (
    NO_INPUT,
    RunLost,
    ServerLost,
    Session,
    db_label,
    work_left,
)
from replangraph.app.settings import (
    AGENT_FIELDS,
    agent_config,
    chosen_settings,
    given_agent_config,
    model_missing,
    recorded_settings,
    resumed_base_url,
)
from replangraph.durable import Lease, ThreadBusy, thread_lease
from replangraph.resume import RESUME

__all__ = ["MISSING_MODEL", "UsageError", "main", "make_parser"]

MISSING_MODEL = (
    "replangraph {command} needs a model: set OPENAI_API_KEY (and optionally OPENAI_BASE_URL or --base-url for an "
    "OpenAI-compatible server such as vLLM, Ollama or llama.cpp). Try `replangraph demo` to run offline."
)
LIVE_HINT = "(pip install 'replangraph[cli]' for a live view of the queue; plain lines follow)"


def choose_output(args: argparse.Namespace, out: TextIO) -> Output:
    """``--json``; else the live view on a terminal that rich can draw on; else plain lines."""
    if getattr(args, "json", False):
        return JsonOutput(out)
    if args.command in ("demo", "run", "resume") and is_tty(out) and os.environ.get("TERM") != "dumb":
        try:
            from replangraph.app.live import LiveOutput  # loaded when the command runs: the CLI starts fast
        except ImportError:  # rich is optional: the `cli` extra
            print(LIVE_HINT, file=sys.stderr, flush=True)
            return PlainOutput(out)
        return LiveOutput(out)
    return PlainOutput(out)


def run_demo(output: Output) -> int:
    """The bundled scripted scenario; exit code 0 when all products reach the final answer."""
    # loaded when the command runs: the CLI starts fast
    from replangraph.app.demo import DEMO_GOAL, build_demo_graph, expected_products
    from replangraph.config import AgentConfig

    output.note("replangraph demo: SCRIPTED chat model, no LLM is called.")
    output.note("The scripted worker reads 5 products per subtask and hands the rest off.\n")
    output.note(f"Goal: {DEMO_GOAL}\n")
    inputs, config = {"messages": [("user", DEMO_GOAL)]}, {"configurable": {"thread_id": "demo"}}
    state = output.stream(build_demo_graph(), inputs, config, max_steps=AgentConfig().max_steps)
    answer = state.get("final_answer", "")
    output.note(f"\nFinal answer:\n{answer}\n")
    wanted = expected_products(19)
    found = sum(name in answer for name in wanted)
    output.note(f"Check: {found}/{len(wanted)} products in the final answer.")
    code = 0 if found == len(wanted) else 1
    output.result(
        run_finished(
            code, "demo", state, output.usage.total, check=f"{found}/{len(wanted)} products in the final answer"
        )
    )
    return code


def build(settings: dict[str, Any], checkpointer: Any, store: Any, model: Any = None, tools: list | None = None) -> Any:
    """The graph `run` builds from ``settings`` (``model``: a stand-in for the one they name; ``tools``: those
    ``settings`` name, loaded already)."""
    from replangraph import build_graph  # loaded when the command runs: the CLI starts fast
    from replangraph.app.studio import chat_model_from_env

    agents = load_agents(settings["agents"])
    try:
        return build_graph(
            model or chat_model_from_env(settings["model"], settings["base_url"]),
            tools=load_tools(list(settings["tools"])) if tools is None else tools,
            agents=agents,
            config=agent_config(settings),
            checkpointer=checkpointer,
            store=store,
        )
    except (ValueError, TypeError) as exc:  # several tools of one name, a team member that is no agent type
        raise UsageError(f"Cannot build the graph from these flags: {sentence(str(exc))}") from None


def sentence(text: str) -> str:
    """``text`` ending with a full stop."""
    text = " ".join(text.split())
    return text if text.endswith((".", "?", "!")) else text + "."


def check_model(settings: dict[str, Any], command: str) -> None:
    """Before a run: a model is configured, its server answers (exit 4 if not), and a local server's model is
    chosen when none was named (recorded with the run's settings)."""
    if model_missing(settings):
        raise UsageError(MISSING_MODEL.format(command=command))
    try:
        served = check_server(settings)
    except NoModel as exc:
        raise UsageError(str(exc)) from None
    if served:
        settings["model"] = served


# The database


def chosen_db(db: str | None) -> str | Path:
    """``--db``, else $REPLANGRAPH_DB (a path or a PostgreSQL URL), else the default SQLite file."""
    from replangraph.durable import DB_ENV, default_db_path  # loaded when the command runs: the CLI starts fast

    return db or os.environ.get(DB_ENV) or default_db_path()


def open_db(stack: ExitStack, db: str | Path, *, must_exist: bool = False) -> tuple[Any, Any]:
    """``(checkpointer, store)`` on ``db``, closed with ``stack``; a database that cannot be opened is a UsageError."""
    from replangraph.durable import is_postgres_url, open_saver  # loaded when the command runs: the CLI starts fast

    if must_exist and not is_postgres_url(db) and not Path(db).expanduser().is_file():
        raise UsageError(f"There is no run to resume here: the database {db} does not exist.")
    try:
        return stack.enter_context(open_saver(db))
    except ConnectionError as exc:  # its message names the server and the fix already
        raise UsageError(sentence(str(exc))) from None
    except (OSError, RuntimeError, ValueError, sqlite3.Error) as exc:
        raise UsageError(f"Cannot open the database {db_label(db)}: {sentence(str(exc))}") from None


def hold_thread(stack: ExitStack, db: str | Path, thread: str) -> Lease:
    """Hold the thread's lease in ``db`` until ``stack`` closes, so that no other process runs it meanwhile; one
    held by another process raises `ThreadBusy` (exit 6)."""
    try:
        return stack.enter_context(thread_lease(db, thread))
    except ConnectionError as exc:
        raise UsageError(sentence(str(exc))) from None
    except (OSError, ValueError, sqlite3.Error) as exc:  # ValueError: a bad $REPLANGRAPH_LEASE_TTL_S
        raise UsageError(f"Cannot hold the thread's lease in {db_label(db)}: {sentence(str(exc))}") from None


# Commands


def run_goal(goal: str, args: argparse.Namespace, output: Output) -> int:
    """Run a real model through ChatOpenAI (any OpenAI-compatible server via --base-url or OPENAI_BASE_URL),
    checkpointing every step on the thread."""
    settings = chosen_settings(args, {})
    if not goal.strip():
        raise UsageError('replangraph run needs a goal: say what the agent should do, e.g. replangraph run "..."')
    tools = load_tools(list(settings["tools"]))  # a bad spec ends the command before the server is asked
    load_agents(settings["agents"])
    check_model(settings, "run")
    thread = args.thread or uuid.uuid4().hex[:8]
    command = goal.strip() if command_in(goal) or cancels(goal) else None  # e.g. `--thread ID /status`
    with ExitStack() as stack:
        db = chosen_db(args.db)
        checkpointer, store = open_db(stack, db)
        lease = hold_thread(stack, db, thread)
        session = Session(build(settings, checkpointer, store, tools=tools), thread, settings, args.db, output)
        session.lease = lease
        session.started()
        return session.guarded({"messages": [("user", goal)]}, command)


_used_temporal: list[bool] = []
"""Not empty once a command connected to Temporal: the console script then leaves without interpreter teardown."""


def temporal() -> Any:
    """``replangraph.temporal``; a UsageError saying what to install without the extra."""
    try:
        import replangraph.temporal as module
    except ImportError as exc:
        raise UsageError(sentence(str(exc))) from None
    if not _used_temporal:
        module.core_logs_to_python()  # stdout holds what the command prints (--json: JSON lines only)
    _used_temporal.append(True)
    return module


def exit_now(code: int) -> NoReturn:
    """Leave the process with ``code`` at once, its output flushed. Temporal's client leaves native threads that
    can abort the interpreter's teardown (``Fatal Python error: PyGILState_Release``, exit 134, after all was
    printed: temporalio/sdk-python#300, open); skipping the teardown is the known workaround."""
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def serve_worker(args: argparse.Namespace, out: TextIO) -> int:
    """``replangraph worker --temporal ADDRESS``: serve the task queue with the graph `run` builds from the flags,
    until Ctrl-C (exit 130); a server that cannot be reached ends it with exit code 4."""
    import asyncio

    engine = temporal()
    settings = chosen_settings(args, {})
    if args.demo:
        from replangraph.app.demo import demo_model, read_ranking

        refuse_flags(args, ("model", "base_url", "tools", "agents"), "the demo has its own model and tool")
        graph = build(settings, None, None, model=demo_model(), tools=[read_ranking])
    else:
        tools = load_tools(list(settings["tools"]))
        check_model(settings, "worker")
        graph = build(settings, None, None, tools=tools)

    def ready() -> None:
        say(out, f"worker: serving task queue {args.task_queue} on {args.temporal} (Ctrl-C stops it)")

    try:
        serving = engine.serve(args.temporal, graph, task_queue=args.task_queue, ready=ready, **stored(args))
        asyncio.run(serving)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except RuntimeError as exc:
        raise temporal_down(args.temporal, exc) from None
    return EXIT_DONE


def stored(args: argparse.Namespace) -> dict[str, Any]:
    """Where a run on Temporal keeps large payloads and how it encodes them (``--payloads``, ``--codec``)."""
    codec = load_spec(args.codec, "--codec") if args.codec else None
    if isinstance(codec, type):
        codec = codec()
    return {"payloads": args.payloads, "codec": codec}


def temporal_down(address: str, exc: RuntimeError) -> Exception:
    """What to raise for ``exc`` from Temporal's client: `ServerDown` (exit 4) when it could not connect to the
    server at ``address``, else ``exc`` itself."""
    if "connect" not in str(exc):
        return exc
    return ServerDown(f"The Temporal server at {address} does not answer: {sentence(str(exc))}")


@contextmanager
def temporal_run(engine: Any, address: str, thread: str, **options: Any) -> Iterator[Any]:
    """The run ``thread`` on the Temporal server at ``address`` (`replangraph.temporal.remote.TemporalRun`), open
    for the block; a server that cannot be reached is `ServerDown` (exit 4)."""
    try:
        run = engine.TemporalRun(address, thread, **options)
    except RuntimeError as exc:
        raise temporal_down(address, exc) from None
    with run:
        yield run


GRAPH_FLAGS = ("db", "model", "base_url", "tools", "agents")
"""What `run` builds the graph from, and where it keeps the run: on Temporal, the workers' business."""


def refuse_flags(args: argparse.Namespace, names: tuple[str, ...], why: str) -> None:
    """A UsageError naming the flags among ``names`` that were given, with ``why`` they are refused."""
    given = [f"--{name.replace('_', '-')}" for name in names if getattr(args, name, None) not in (None, [])]
    if given:
        raise UsageError(f"replangraph {args.command} --temporal takes no {', '.join(given)}: {why}.")


def run_goal_on_temporal(goal: str, args: argparse.Namespace, output: Output) -> int:
    """``run --temporal``: start the run as a workflow on the Temporal server and follow it as `run_goal` follows a
    local one. The workers build the graph; the run-time flags given go with the run as its context."""
    if not goal.strip():
        raise UsageError('replangraph run needs a goal: say what the agent should do, e.g. replangraph run "..."')
    refuse_flags(
        args,
        GRAPH_FLAGS,
        "the workers build the graph from their own flags (give those to replangraph worker), and Temporal keeps "
        "the run, not a database",
    )
    engine = temporal()
    thread = args.thread or uuid.uuid4().hex[:8]
    command = goal.strip() if command_in(goal) or cancels(goal) else None  # e.g. `--thread ID /status`
    settings = {**chosen_settings(args, {}), "max_steps": args.max_steps}  # the workers' budget unless given
    context = given_agent_config(args)
    options = {"task_queue": args.task_queue, "context": context, **stored(args)}
    with temporal_run(engine, args.temporal, thread, **options) as run:
        session = Session(run, thread, settings, None, output, temporal=args.temporal)
        run.note = session.say
        try:
            run.start({"messages": [("user", goal)]})
        except engine.Refused as refused:
            raise UsageError(
                f"The thread {thread} cannot take this goal ({refused}): leave out --thread for a new run; "
                f"{session.resume_command()} shows how the thread's run ended."
            ) from None
        session.started()
        return session.guarded(None, command)


def resume_on_temporal(args: argparse.Namespace, output: Output) -> int:
    """``resume --temporal``: take up the run on ``--thread`` where it is: answer what it waits for, follow the work
    it does, or show how it ended."""
    refuse_flags(
        args,
        (*GRAPH_FLAGS, *AGENT_FIELDS),
        "the workers build the graph, the run's settings were fixed when it started, and Temporal keeps the run, "
        "not a database",
    )
    engine = temporal()
    settings = {**chosen_settings(args, {}), "max_steps": None}  # the run's budget is not known here
    with temporal_run(engine, args.temporal, args.thread, **stored(args)) as run:
        session = Session(run, args.thread, settings, None, output, temporal=args.temporal)
        run.note = session.say
        session.answers = list(args.answer or [])
        try:
            snapshot = run.attach()
        except engine.RunNotFound:
            raise UsageError(
                f"There is no run with thread id {args.thread!r} on the Temporal server at {args.temporal}: use "
                "the id printed when the run started."
            ) from None
        except RunLost as lost:
            return session.stopped(EXIT_REPORT, "run lost", str(lost))
        if not snapshot.interrupts and not work_left(snapshot):
            return show_ended(session, snapshot.values, args.answer)
        waits = f", {len(snapshot.interrupts)} answer(s) waited for" if snapshot.interrupts else ""
        session.say(f"thread: {args.thread} (following the run on Temporal{waits})")
        session.output.result({"event": "run_started", "thread": args.thread, "resume": session.resume_command()})
        command = command_in(session.answers[0]) if session.answers and not snapshot.interrupts else None
        if command is not None:  # nothing waits: a slash command goes to the working run, as input
            session.answers.pop(0)
            return session.guarded(command, command)
        return session.guarded(NO_INPUT if snapshot.interrupts else None)


def saved_settings(args: argparse.Namespace, checkpointer: Any, db: str | Path) -> dict[str, Any]:
    """The settings of the run on ``--thread`` (its flags over what it recorded); UsageError when there is none."""
    saved = checkpointer.get_tuple({"configurable": {"thread_id": args.thread, "checkpoint_ns": ""}})
    if saved is None:
        raise UsageError(
            f"There is no run with thread id {args.thread!r} in {db_label(db)}: use the id printed when the run "
            "started, or pass the --db it ran with."
        )
    return chosen_settings(args, recorded_settings(saved.metadata))


def resume_thread(args: argparse.Namespace, output: Output) -> int:
    """Go on with the run on ``--thread``: answer what it waits for, run the work it has left, or show how it ended."""
    from replangraph.resume import unfinished  # loaded when the command runs: the CLI starts fast

    db = chosen_db(args.db)
    with ExitStack() as stack:
        checkpointer, store = open_db(stack, db, must_exist=True)
        settings = saved_settings(args, checkpointer, db)
        lease = hold_thread(stack, db, args.thread)
        # The state is read without the run's tools: showing a run that ended needs none of them.
        reader = build(settings, checkpointer, store, tools=[])
        snapshot = reader.get_state({"configurable": {"thread_id": args.thread}})
        # Work left in the checkpoint goes on from it. A run that stopped between steps and then got new input (a
        # command) has none there, as LangGraph dropped the waiting steps: the graph's /resume picks it up.
        stopped = not snapshot.interrupts and not work_left(snapshot) and unfinished(snapshot.values)
        if not snapshot.interrupts and not work_left(snapshot) and not stopped:
            return show_ended(Session(reader, args.thread, settings, args.db, output), snapshot.values, args.answer)
        settings["base_url"] = resumed_base_url(args.base_url, settings["base_url"])
        tools = load_tools(list(settings["tools"]))
        check_model(settings, "resume")
        session = Session(build(settings, checkpointer, store, tools=tools), args.thread, settings, args.db, output)
        session.answers = list(args.answer or [])
        session.lease = lease
        waits = f", {len(snapshot.interrupts)} answer(s) waited for" if snapshot.interrupts else ""
        session.say(f"thread: {args.thread} (resuming{waits})")
        session.output.result({"event": "run_started", "thread": args.thread, "resume": session.resume_command()})
        if stopped:
            return session.guarded({"messages": [("user", RESUME)]}, RESUME)
        return session.guarded(NO_INPUT if snapshot.interrupts else None)


def show_ended(session: Session, values: dict[str, Any], answers: list[str] | None) -> int:
    """`resume` of a run that had ended: how it ended, again (nothing runs)."""
    session.say(f"The run on thread {session.thread} had already ended.")
    if answers:
        session.say("Nothing was waiting for an answer, so --answer was not used.")
    return session.finish(values)


def print_output(args: argparse.Namespace, out: TextIO) -> int:
    """``replangraph output --thread ID [OUTPUT_ID]``: the whole text the run kept under the id, or the ids; with
    ``--temporal``, of the run on that Temporal server."""
    from replangraph.testing import ScriptedChatModel  # loaded when the command runs: the CLI starts fast

    if args.temporal:
        refuse_flags(args, ("db",), "Temporal keeps the run, not a database")
        engine = temporal()
        with temporal_run(engine, args.temporal, args.thread, **stored(args)) as run:
            try:
                values = run.kept_values()
            except engine.RunNotFound:
                raise UsageError(f"There is no run with thread id {args.thread!r} on {args.temporal}.") from None
        return print_kept(args, out, values, None)
    db = chosen_db(args.db)
    with ExitStack() as stack:
        checkpointer, store = open_db(stack, db, must_exist=True)
        settings = saved_settings(args, checkpointer, db)
        reader = build(settings, checkpointer, store, model=ScriptedChatModel(respond=lambda request: ""), tools=[])
        values = reader.get_state({"configurable": {"thread_id": args.thread}}).values
        return print_kept(args, out, values, store)


def print_kept(args: argparse.Namespace, out: TextIO, values: dict[str, Any], store: Any) -> int:
    """The output ``args.output_id`` the run (its state ``values``, the graph's ``store``) kept, or its ids."""
    from replangraph.durable import kept_output, kept_output_ids  # loaded when the command runs: the CLI starts fast

    ids = kept_output_ids(values, store, args.thread)
    if args.output_id is None:
        say(out, "\n".join(ids) if ids else f"The run on thread {args.thread} kept no outputs yet.")
        return 0
    text = kept_output(values, store, args.thread, args.output_id)
    if text is None:
        known = ", ".join(ids) if ids else "none yet"
        raise UsageError(f"The run on thread {args.thread} kept no output {args.output_id!r}; it kept: {known}.")
    say(out, text)
    return 0


def print_graph(args: argparse.Namespace, out: TextIO) -> int:
    """The graph `run` builds with these flags, as mermaid; a scripted stand-in takes the model's place."""
    from replangraph.testing import ScriptedChatModel  # loaded when the command runs: the CLI starts fast

    settings = chosen_settings(args, {})
    graph = build(settings, None, None, model=ScriptedChatModel(respond=lambda request: ""))
    say(out, graph.get_graph().draw_mermaid().rstrip("\n"))
    return 0


# The benchmarks: a folder of the source checkout, not part of the installed package


def is_checkout(root: Path) -> bool:
    """Whether ``root`` is a replangraph source checkout with its benchmarks."""
    pyproject = root / "pyproject.toml"
    try:
        named = 'name = "replangraph"' in pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return named and (root / "benchmarks" / "__main__.py").is_file()


def benchmarks_root(cwd: Path | None = None) -> Path | None:
    """The checkout holding ``benchmarks/``: the current folder or one above it, else the source tree the package
    was installed from (an editable install); None when neither is one."""
    import replangraph  # loaded when the command runs: the CLI starts fast

    here = (cwd or Path.cwd()).resolve()
    for root in (here, *here.parents, Path(replangraph.__file__).resolve().parent.parent):
        if is_checkout(root):
            return root
    return None


def run_bench(args: argparse.Namespace, out: TextIO) -> int:
    """``python -m benchmarks ARGS`` from the checkout (no benchmark named: ``compare``), its output passed
    through; its exit code."""
    root = benchmarks_root()
    if root is None:
        raise UsageError(
            "replangraph bench runs the benchmarks of a source checkout, which this installation has not: run it "
            "inside a clone of the replangraph repository (the folder holding benchmarks/ and pyproject.toml)."
        )
    given = args.args[1:] if args.args[:1] == ["--"] else args.args
    if not given:
        raise UsageError(
            "replangraph bench needs a benchmark or the comparison's options, e.g. replangraph bench --base-url URL "
            "--model NAME, or replangraph bench engine --quick."
        )
    named = not given[0].startswith("-")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)}
    command = [sys.executable, "-m", "benchmarks", *([] if named else ["compare"]), *given]
    if out is sys.stdout:
        return subprocess.call(command, env=env)
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) as child:
        for line in child.stdout or ():
            out.write(line)
            out.flush()
        return child.wait()


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    """Entry point of the ``replangraph`` console script: the command's exit code."""
    console = argv is None  # the console script: the process ends with this command
    out = out or sys.stdout
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        code = run_command(argv, out)
        if console and _used_temporal:
            exit_now(code)
        return code
    except BrokenPipeError:  # the reader stopped reading (`| head`): end quietly, as other Unix tools do
        if out is sys.stdout:  # what is still buffered for it goes nowhere, not to a traceback at exit
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                os.close(devnull)
            except (OSError, ValueError):  # not a file (replaced, closed)
                pass
        return EXIT_PIPE


def run_command(argv: list[str], out: TextIO) -> int:
    """Read ``argv`` and run its command; what goes wrong ends it with a sentence on stderr and an exit code."""
    if argv[:1] == ["bench"] and argv[1:2] and argv[1].startswith("-") and argv[1] not in ("-h", "--help", "--"):
        argv = ["bench", "--", *argv[1:]]  # the comparison's flags: argparse takes none before a REMAINDER
    try:
        args = make_parser().parse_args(argv)
    except ArgumentsRefused as refused:  # usage and message are on stderr; --json promises an error object
        if "--json" in argv:
            say(out, json_line({"event": "error", "exit_code": EXIT_USAGE, "message": refused.message}))
        return EXIT_USAGE
    output = choose_output(args, out)
    try:
        if args.command == "demo":
            return run_demo(output)
        if args.command == "graph":
            return print_graph(args, out)
        if args.command == "bench":
            return run_bench(args, out)
        if args.command == "resume":
            return resume_on_temporal(args, output) if args.temporal else resume_thread(args, output)
        if args.command == "output":
            return print_output(args, out)
        if args.command == "worker":
            return serve_worker(args, out)
        if args.temporal:
            return run_goal_on_temporal(args.goal, args, output)
        return run_goal(args.goal, args, output)
    except (UsageError, ServerDown, ServerLost, ThreadBusy) as error:
        code = {ServerDown: EXIT_CONNECTION, ServerLost: EXIT_CONNECTION, ThreadBusy: EXIT_BUSY}.get(
            type(error), EXIT_USAGE
        )
        print(error, file=sys.stderr, flush=True)
        output.result({"event": "error", "exit_code": code, "message": str(error)})
        return code
    except KeyboardInterrupt:  # outside a run (a benchmark, say); a run says how to resume itself
        print(file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
