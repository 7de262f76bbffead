"""A durable run in its own process, for the kill tests (``tests/test_kill_resume.py``).

    python tests/durable_worker.py DB THREAD LOG MODE [ANSWER]

``DB`` is what ``replangraph.durable.open_saver`` opens (a SQLite path or a PostgreSQL URL), ``THREAD`` the
run's thread id, ``LOG`` a file every model and tool call appends one line to. ``MODE``: ``start`` (a new run
of `GOAL`), ``question`` (the same, with one subtask asking the user first), ``resume`` (go on from the
checkpoint) or ``answer`` (answer the pending question with ``ANSWER``).

When the run pauses for a question the worker logs ``WAITING <question>`` and blocks reading stdin, as a
terminal user would be typing, so the parent can kill it there. With ``$DURABLE_WORKER_HOLD_AFTER`` set to N,
the subtask answer that would follow N answers is held: the worker logs ``HELD`` and blocks reading stdin, mid
superstep, until the parent kills it (the run cannot end before the parent has seen the line). When the run
ends it writes `result_path(LOG)` (final answer and task statuses, as JSON), prints the final answer and exits 0.
A worker whose stdin closes while it blocks (its parent is gone) exits 4.

With ``$DURABLE_WORKER_LEASE_TTL`` set (seconds), the run holds the thread's lease (``thread_lease``, with that
TTL, waiting up to ``$DURABLE_WORKER_LEASE_WAIT`` seconds for it, default 0): the worker logs ``LEASED`` once it
holds it; a lease held by another process is logged ``BUSY`` and exits `EXIT_BUSY`, with nothing run.

Log lines are tab-separated: ``CALL pid kind who turn step`` for a model call (kind ``plan``, ``subtask``,
``replan``, ``final``; ``who`` the item or ``-``; ``turn`` the tool results the request already holds),
``TOOL pid fetch item - step`` for a tool call, ``DONE pid subtask item turn step`` once a subtask's answer
is returned, ``HELD pid subtask item turn step``, ``WAITING pid question``, ``LEASED pid time`` (seconds since
the epoch), ``BUSY pid message`` and ``END pid``. Each line is written, flushed and fsynced before the call goes
on, so a SIGKILL loses no line of a call that was made.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent):  # scripting.py, and the repo root, whatever the working folder
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from langchain_core.tools import tool  # noqa: E402
from langgraph.config import get_config  # noqa: E402
from langgraph.types import Command  # noqa: E402
from scripting import is_replan, make_model, plan_of, subtask_of  # noqa: E402

from replangraph import AgentConfig, build_graph  # noqa: E402
from replangraph.durable import ThreadBusy, open_saver, thread_lease  # noqa: E402
from replangraph.testing import tool_call  # noqa: E402

GOAL = "collect the eight items and report them"
ITEMS = [f"item {n}" for n in range(1, 9)]
DEPENDS = {"item 7": ["item 1", "item 2", "item 3"], "item 8": ["item 4", "item 5", "item 6", "item 7"]}
"""Items 1-6 are independent (two run at a time); 7 waits for 1-3, and 8 for 4-7."""
ASKING = "item 5"
"""The subtask that asks the user first in question mode."""
QUESTION = "Which colour should item 5 be?"
CONFIG = AgentConfig(max_concurrency=2, verify_results=False)  # the worker answers every request as a subtask
HOLD_ENV = "DURABLE_WORKER_HOLD_AFTER"
LEASE_ENV, LEASE_WAIT_ENV = "DURABLE_WORKER_LEASE_TTL", "DURABLE_WORKER_LEASE_WAIT"
EXIT_BUSY = 6


def task_id(item: str) -> str:
    return item.replace(" ", "")


def marker(item: str) -> str:
    return "payload-of-" + item.replace(" ", "-")


def payload(item: str) -> str:
    """What ``fetch(item)`` returns: a marker at each end of a long text."""
    return f"{marker(item)} " + "x" * 3000 + f" end-of-{item.replace(' ', '-')}"


def result_of(item: str, fetched: str, answer: str | None = None) -> str:
    """A subtask's answer: its payload's markers (both only when the whole payload was read)."""
    ends = [part for part in (marker(item), f"end-of-{item.replace(' ', '-')}") if part in fetched]
    text = f"RESULT {item}: " + " ".join(ends) + f" ({len(fetched)} chars)"
    return text + (f" colour={answer}" if answer is not None else "")


PLAN = plan_of(
    *({"id": task_id(item), "content": f"collect {item}"} for item in ITEMS if item not in DEPENDS),
    *(
        {"id": task_id(item), "content": f"collect {item}", "depends_on": [task_id(d) for d in deps]}
        for item, deps in DEPENDS.items()
    ),
)


def result_path(log: str | os.PathLike[str]) -> Path:
    return Path(f"{log}.result.json")


class Log:
    """Appends one line per call to the log file, fsynced."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = str(path)

    def write(self, *fields: object) -> None:
        line = "\t".join(str(f) for f in (fields[0], os.getpid(), *fields[1:])) + "\n"
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(line)
            out.flush()
            os.fsync(out.fileno())


def block_until_killed() -> None:
    """Wait on stdin, which the parent never writes; exit 4 if it closes (the parent is gone)."""
    sys.stdin.read()
    os._exit(4)


class Gate:
    """Lets ``after`` subtask answers through (None: all); each later one is logged ``HELD`` and blocks."""

    def __init__(self, after: int | None, log: Log):
        self.left = after
        self.log = log
        self.lock = threading.Lock()

    def answer(self, item: str, turn: int) -> None:
        """Return at once, or hold this answer until the process is killed."""
        with self.lock:
            if self.left is None:
                return
            self.left -= 1
            held = self.left < 0
        if held:
            self.log.write("HELD", "subtask", item, turn, step())
            block_until_killed()


def step() -> object:
    """The LangGraph superstep of the node making the call ("-" outside a run)."""
    try:
        return (get_config().get("metadata") or {}).get("langgraph_step", "-")
    except RuntimeError:
        return "-"


def build(checkpointer, store, log: str | os.PathLike[str], question: bool = False, hold_after: int | None = None):
    """The graph both the worker and the tests use: `PLAN`, a ``fetch`` tool, every call logged; answers after
    the first ``hold_after`` are held (see `Gate`)."""
    out = Log(log)
    gate = Gate(hold_after, out)

    @tool
    def fetch(item: str) -> str:
        """Fetch one item's payload."""
        out.write("TOOL", "fetch", item, "-", step())
        return payload(item)

    def work(request):
        item = subtask_of(request).removeprefix("collect ")
        turn = len(request.tool_results)
        out.write("CALL", "subtask", item, turn, step())
        answer = None
        if question and item == ASKING:
            if not request.called("ask_user"):
                return tool_call("ask_user", {"question": QUESTION})
            answer = request.last_result("ask_user")
        fetched = request.last_result("fetch")
        if fetched is None:
            return tool_call("fetch", {"item": item})
        gate.answer(item, turn)
        reply = result_of(item, fetched, answer)
        out.write("DONE", "subtask", item, turn, step())
        return reply

    model = make_model(PLAN, work)
    respond = model.respond

    def logged(request):
        if is_replan(request):
            out.write("CALL", "replan", "-", 0, step())
        elif "Plan" in request.tool_names:
            out.write("CALL", "plan", "-", 0, step())
        elif not request.tool_names:
            out.write("CALL", "final", "-", 0, step())
        return respond(request)

    model = model.model_copy(update={"respond": logged})
    return build_graph(model, tools=[fetch], config=CONFIG, checkpointer=checkpointer, store=store)


def run_config(thread: str) -> dict:
    return {"configurable": {"thread_id": thread}}


def main(argv: list[str]) -> int:
    if len(argv) not in (4, 5) or argv[3] not in ("start", "question", "resume", "answer"):
        print(__doc__, file=sys.stderr)
        return 2
    db, thread, log, mode = argv[:4]
    out = Log(log)
    with open_saver(db) as (checkpointer, store), ExitStack() as leased:
        if os.environ.get(LEASE_ENV):
            ttl, wait = float(os.environ[LEASE_ENV]), float(os.environ.get(LEASE_WAIT_ENV) or 0)
            try:
                leased.enter_context(thread_lease(db, thread, ttl_s=ttl, wait_s=wait))
            except ThreadBusy as busy:
                out.write("BUSY", busy)
                print(busy, file=sys.stderr)
                return EXIT_BUSY
            out.write("LEASED", f"{time.time():.3f}")
        hold = os.environ.get(HOLD_ENV)
        graph = build(checkpointer, store, log, mode in ("question", "answer"), int(hold) if hold else None)
        config = run_config(thread)
        if mode in ("start", "question"):
            given = {"messages": [("user", GOAL)]}
        elif mode == "resume":
            given = None
        else:
            given = Command(resume=argv[4] if len(argv) > 4 else "")
        final = graph.invoke(given, config)
        if final.get("__interrupt__"):
            asked = [i.value.get("question", "") for i in final["__interrupt__"] if isinstance(i.value, dict)]
            out.write("WAITING", re.sub(r"\s+", " ", " | ".join(asked)))
            block_until_killed()  # a user at a terminal, still thinking: the parent kills the process here
        statuses = {tid: task["status"] for tid, task in final["tasks"].items()}
        result_path(log).write_text(
            json.dumps({"final_answer": final["final_answer"], "statuses": statuses}), encoding="utf-8"
        )
    out.write("END")
    print(final["final_answer"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
