"""A durable run whose turns make eight tool calls at once, killed in one of them, for the call-grain fault rows.

    python tests/helpers/call_kill_worker.py DB THREAD LOG MODE CONCURRENCY [KILL_AT] [WAY] [DURABILITY]

``DB``: a SQLite path or a PostgreSQL URL; ``MODE``: ``start`` or ``resume``; ``CONCURRENCY``: the run's
``max_concurrency``; ``KILL_AT`` (``start`` only): the process kills itself with SIGKILL inside that call (1-8) of
the turn of subtask `killed_subtask`, the first of the second wave (so subtasks have completed before it);
``WAY``: ``invoke`` (default) or ``ainvoke``; ``DURABILITY``: the run's ``durability=`` (default: the graph's).
``-`` leaves an optional argument at its default.

The plan has ``2 x CONCURRENCY`` subtasks. Each one's first turn calls ``append`` eight times (one turn, eight
calls); its second answers with what the calls returned. Log lines, tab-separated, fsynced before the call goes on:
``START pid item``, ``END pid item`` around each ``append`` call (call n takes n x `CALL_S`), ``SAVED pid item``
once the saver has written the call's result, ``MODEL pid subtask turn`` for each subtask's model turn, ``KILL pid
item`` just before the kill. When the run ends the worker writes the final answer and the subtasks' statuses and
results to ``LOG.result.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from durable_worker import Log  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from scripting import make_model, plan_of, subtask_of  # noqa: E402

from replangraph import AgentConfig, build_graph  # noqa: E402
from replangraph.durable import is_postgres_url, open_saver, postgres_conninfo  # noqa: E402
from replangraph.testing import tool_call  # noqa: E402

CALLS = 8
"""Calls in each subtask's turn."""
CALL_S = 0.02
"""Call n of a turn takes n times this: calls overlap, and end one after another."""


def items(subtask: int) -> list[str]:
    return [f"s{subtask}-item{n}" for n in range(1, CALLS + 1)]


def killed_subtask(concurrency: int) -> int:
    return concurrency + 1


def noting_saves(saver, out: Log):
    """``saver``, logging ``SAVED pid item`` once a call's result is written (after its ``put_writes`` returns)."""

    def saved(writes) -> None:
        for channel, value in writes:
            reply = value.get("result") if channel == "__return__" and isinstance(value, dict) else None
            content = str(getattr(reply, "content", ""))
            if content.startswith("appended "):
                out.write("SAVED", content.removeprefix("appended "))

    put, aput = saver.put_writes, saver.aput_writes

    def put_writes(config, writes, task_id, task_path=""):
        put(config, writes, task_id, task_path)
        saved(writes)

    async def aput_writes(config, writes, task_id, task_path=""):
        await aput(config, writes, task_id, task_path)
        saved(writes)

    saver.put_writes, saver.aput_writes = put_writes, aput_writes
    return saver


def build(checkpointer, log: str, concurrency: int, kill_at: int | None):
    out = Log(log)
    noting_saves(checkpointer, out)
    started: list[str] = []
    victim = killed_subtask(concurrency)

    @tool
    def append(item: str) -> str:
        """Append one item to the ledger."""
        out.write("START", item)
        if kill_at is not None and item.startswith(f"s{victim}-"):
            started.append(item)
            if len(started) == kill_at:
                out.write("KILL", item)
                os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(CALL_S * int(item.rsplit("item", 1)[1]))
        out.write("END", item)
        return f"appended {item}"

    def work(request):
        subtask = int(subtask_of(request).removeprefix("append batch "))
        out.write("MODEL", subtask, len(request.tool_results))
        if not request.tool_results:
            return [tool_call("append", {"item": item}, call_id=f"call-{item}") for item in items(subtask)]
        return "ledger: " + "; ".join(str(m.content) for m in request.tool_results)

    plan = plan_of(*({"id": f"s{i}", "content": f"append batch {i}"} for i in range(1, 2 * concurrency + 1)))
    config = AgentConfig(max_concurrency=concurrency, verify_results=False, single_agent_fallback=False)
    return build_graph(make_model(plan, work), tools=[append], config=config, checkpointer=checkpointer)


@asynccontextmanager
async def async_saver(db: str):
    """The async saver of ``db`` (``ainvoke`` needs one): AsyncPostgresSaver or AsyncSqliteSaver."""
    if is_postgres_url(db):
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with AsyncPostgresSaver.from_conn_string(postgres_conninfo(db)) as saver:
            await saver.setup()
            yield saver
    else:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(db) as saver:
            yield saver


@contextmanager
def sync_saver(db: str):
    with open_saver(db) as (saver, _store):
        yield saver


def finish(log: str, final: dict) -> None:
    tasks = final.get("tasks") or {}
    Path(f"{log}.result.json").write_text(
        json.dumps(
            {
                "final_answer": final.get("final_answer"),
                "statuses": {tid: t["status"] for tid, t in tasks.items()},
                "results": {tid: t.get("result") or "" for tid, t in tasks.items()},
            }
        ),
        encoding="utf-8",
    )


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[3] not in ("start", "resume"):
        print(__doc__, file=sys.stderr)
        return 2
    db, thread, log, mode, concurrency = argv[0], argv[1], argv[2], argv[3], int(argv[4])
    kill_at = int(argv[5]) if len(argv) > 5 and argv[5] != "-" else None
    way = argv[6] if len(argv) > 6 and argv[6] != "-" else "invoke"
    durability = {"durability": argv[7]} if len(argv) > 7 and argv[7] != "-" else {}
    given = {"messages": [("user", "append every batch")]} if mode == "start" else None
    config = {"configurable": {"thread_id": thread}}
    if way == "ainvoke":

        async def run() -> dict:
            async with async_saver(db) as saver:
                return await build(saver, log, concurrency, kill_at).ainvoke(given, config, **durability)

        final = asyncio.run(run())
    else:
        with sync_saver(db) as saver:
            final = build(saver, log, concurrency, kill_at).invoke(given, config, **durability)
    finish(log, final)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
