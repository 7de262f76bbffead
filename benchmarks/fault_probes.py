"""The fault matrix's probes that run in this process: scripted models, loopback HTTP servers, SQLite files.

Each probe takes the command line's arguments (``quick``, ``postgres``) and returns a `Finding`: whether the
property held, and the figures that say so.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import random
import sqlite3
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from langgraph.store.sqlite import SqliteStore
from pydantic import ValidationError

from replangraph import AgentConfig, build_graph
from replangraph.context import workspace as kept
from replangraph.context.excerpts import NOTE_RE
from replangraph.durable import kept_output, open_saver
from replangraph.llm.reading import message_text
from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call
from replangraph.tools import workspace_tools

from .context_table import one_run
from .harness import replangraph_agent
from .personas import persona
from .worlds import CatalogWorld

HELPERS = Path(__file__).resolve().parent.parent / "tests" / "helpers"
if str(HELPERS) not in sys.path:  # the loopback server and the durable worker are the tests' own
    sys.path.insert(0, str(HELPERS))

from openai_loopback import OpenAILoopback  # noqa: E402

ODD_THREAD_IDS = ["a.b", "run.2026.11.25", "team/alpha/../beta", "线程-ünï.cødé", "x" * 1_000, "é" * 1_000, ".", "%2E"]
"""Thread ids that once broke a store namespace or a file name (dots, slashes, unicode, 1,000 characters)."""
SEEDS = range(8)
FAILURE_RATE = 0.3


@dataclass(frozen=True)
class Finding:
    """What a probe found: whether the property held, and the figures."""

    held: bool
    figures: str


class FailingLoopback(OpenAILoopback):
    """The loopback server, answering a share of the chat requests with HTTP 500 (``fails()`` decides each)."""

    def __init__(self, responder, fails, **kwargs: Any):
        super().__init__(responder, **kwargs)
        self.fails = fails
        self.failed = 0

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        data = handler.rfile.read(int(handler.headers["Content-Length"]))
        with self._lock:
            failing = self.fails()
            self.failed += failing
        if not failing:
            handler.rfile = io.BytesIO(data)  # read again by the loopback's own handler
            super().handle(handler)
            return
        with self._lock:
            self.requests.append(json.loads(data))
        payload = json.dumps({"error": {"message": "internal error", "type": "server_error"}}).encode()
        handler.send_response(500)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("retry-after-ms", "1")  # the client's own retries count the same, and wait 1 ms
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)


def chat_openai(base_url: str, **fields: Any):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="local", base_url=base_url, api_key="sk-loopback", **fields)


# 2. Tenancy ------------------------------------------------------------------------------------------------------


def secret(thread: int) -> str:
    return f"SECRET-{thread:04d}-of-thread"


def file_of(thread: int) -> str:
    return f"file-of-{thread:04d}.txt"


def thread_number(text: str) -> int:
    return int(text.rsplit("thread number ", 1)[1].split()[0])


def tenant_model(root: str, seen: dict[int, list[str]]) -> ScriptedChatModel:
    """Each thread's subtask writes its secret to a file, reads its big output back by the id its note gives,
    then tries another thread's file by its absolute path and by ``..``, and lists the folder above its own and
    its own; what the tools answered is put in ``seen`` under the thread's number."""
    steps = [
        ("write_file", lambda n: {"path": file_of(n), "content": secret(n)}),
        ("big", lambda n: {"thread": n}),
        ("read_output", None),  # the id the note of the big output gives
        ("read_file", lambda n: {"path": f"{root}/{kept.thread_label(f't-{n + 1}')}/{file_of(n + 1)}"}),
        ("read_file", lambda n: {"path": f"../{kept.thread_label(f't-{n + 1}')}/{file_of(n + 1)}"}),
        ("list_files", lambda n: {"path": ".."}),
        ("list_files", lambda n: {"path": "."}),
    ]

    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:
            work = f"work for thread number {thread_number(request.prompt)}"
            return tool_call("Plan", {"tasks": [{"id": "1", "content": work}]})
        if not request.tool_names:
            return "final"
        number, turn = thread_number(request.prompt), len(request.tool_results)
        if turn >= len(steps):
            seen[number] = [message_text(m) for m in request.tool_results]
            return "done"
        name, args = steps[turn]
        if args is None:
            found = NOTE_RE.search(message_text(request.tool_results[1]))
            return tool_call(name, {"output_id": found.group(1) if found else "none"})
        return tool_call(name, args(number))

    return ScriptedChatModel(respond=respond)


def big(thread: int) -> str:
    """Read this thread's big record."""
    return secret(thread) + " A" * 6_000


def reads_another(replies: list[str], number: int, threads: int) -> bool:
    """Whether a thread's tool replies hold another thread's secret, or list another thread's file."""
    others = [n for n in range(threads) if n != number]
    listed = replies[-1] if replies else ""
    return any(secret(n) in text for text in replies for n in others) or any(file_of(n) in listed for n in others)


def tenancy_on(store: Any, root: str, threads: int) -> tuple[bool, str]:
    """``threads`` runs at once, 16 at a time, on one graph with ``store`` and the file tools on ``root``."""
    seen: dict[int, list[str]] = {}
    graph = build_graph(
        tenant_model(root, seen),
        tools=[big, *workspace_tools(root)],
        config=AgentConfig(max_observation_chars=2_000, verify_results=False),
        store=store,
    )
    tag = uuid.uuid4().hex[:6]  # a database used before holds no thread of this run

    def one(number: int) -> str:
        run = {"configurable": {"thread_id": f"t-{number}"}}
        state = graph.invoke({"messages": [("user", f"Work for thread number {number} now ({tag}).")]}, run)
        return state["tasks"]["1"]["status"]

    with ThreadPoolExecutor(max_workers=16) as pool:
        statuses = list(pool.map(one, range(threads)))
    own_files = sum((Path(root) / kept.thread_label(f"t-{n}") / file_of(n)).is_file() for n in range(threads))
    leaks = sum(reads_another(seen.get(n, []), n, threads) for n in range(threads))
    own_read = sum(secret(n) in (seen.get(n) or ["", "", ""])[2] for n in range(threads))
    completed = statuses.count("completed")
    held = leaks == 0 and completed == threads == own_read == own_files
    return held, (
        f"threads that read another's data {leaks}; completed {completed}; own big output read back by id "
        f"{own_read}; own file in own folder {own_files}"
    )


def tenancy(args: argparse.Namespace) -> Finding:
    threads = 50 if args.quick else 200
    figures, held = [], True
    with tempfile.TemporaryDirectory() as folder:
        conn = sqlite3.connect(Path(folder) / "store.db", check_same_thread=False, isolation_level=None)
        store = SqliteStore(conn)
        store.setup()
        try:
            ok, found = tenancy_on(store, str(Path(folder) / "files"), threads)
        finally:
            conn.close()
        held, figures = held and ok, [f"SQLite store: {found}"]
        if args.postgres:
            with open_saver(args.postgres) as (_saver, store):
                ok, found = tenancy_on(store, str(Path(folder) / "pg-files"), threads)
            held, figures = held and ok, [*figures, f"PostgreSQL store: {found}"]
    return Finding(held, f"{threads} threads, 16 at a time; " + "; ".join(figures))


# 4. A flaky provider ---------------------------------------------------------------------------------------------


def flaky_provider(args: argparse.Namespace) -> Finding:
    items = 30 if args.quick else 60
    seeds = SEEDS[:4] if args.quick else SEEDS
    lost, requests, failed, ended = [], 0, 0, []
    for seed in seeds:
        world = CatalogWorld(items)
        draw = random.Random(seed)
        server = FailingLoopback(persona("compliant", world).respond, lambda d=draw: d.random() < FAILURE_RATE)
        with server:
            model = chat_openai(server.base_url, max_retries=0)  # replangraph's own retries, none of the client's
            # Batches of one page (5 products), as the review measured it: many requests, many splits.
            config = AgentConfig(retry_backoff_s=0.001, batch_size=world.batch)
            graph = build_graph(model, tools=world.tools, config=config)
            try:
                answer = graph.invoke({"messages": [("user", world.goal)]})["final_answer"]
            except Exception as exc:  # a crashed run loses every item
                answer, _ = "", ended.append(type(exc).__name__)
            lost.append(items - world.score(answer))
            requests += len(server.requests)
            failed += server.failed
    held = sum(lost) == 0
    crashed = f"; runs crashed: {len(ended)} ({', '.join(sorted(set(ended)))})" if ended else ""
    return Finding(
        held,
        f"{len(seeds)} seeds × {items} items: lost {sum(lost)} (per seed {lost}); "
        f"HTTP requests {requests}, of them failed {failed} ({failed / max(requests, 1):.0%}){crashed}",
    )


# 5. Compression --------------------------------------------------------------------------------------------------


def compression(args: argparse.Namespace) -> Finding:
    items, window, batch = (60, 6_000, 5) if args.quick else (300, 6_000, 5)
    iterations = -(-items // batch) * 3 + 20
    agent = replangraph_agent(
        verify=False,
        context_window=window,
        reserved_output=1_000,
        keep_last_messages=3,
        max_step_iterations=iterations,
        max_steps=max(1_000, 4 * iterations),
        retry_backoff_s=0.01,
    )
    run = one_run(agent, items, batch, timeout=None)
    outcome = run.outcome
    lost = items - outcome.recovered
    return Finding(
        lost == 0 and outcome.error is None,
        f"{items} items, window {window:,} tokens: lost {lost}; summaries {run.summarizer_calls}; "
        f"largest request {outcome.largest_prompt:,} tokens; model calls {outcome.calls}"
        + (f"; error {outcome.error}" if outcome.error else ""),
    )


# 7. Odd thread ids -----------------------------------------------------------------------------------------------


@contextmanager
def sqlite_parts(folder: str) -> Iterator[tuple[Any, Any]]:
    """A SqliteSaver (opened by `open_saver`) and a SqliteStore on a connection of its own, in ``folder``."""
    conn = sqlite3.connect(Path(folder) / "store.sqlite", check_same_thread=False, isolation_level=None)
    try:
        store = SqliteStore(conn)
        store.setup()
        with open_saver(Path(folder) / "runs.sqlite") as (saver, _none):
            yield saver, store
    finally:
        conn.close()


def odd_ids_on(checkpointer: Any, store: Any) -> tuple[list[str], int]:
    """``(crashes, wrong read-backs)`` of one run per odd thread id on these parts; a crash is named by its
    error."""
    long = "FIRST " + "detail " * 2_000 + "LAST"
    respond = lambda request: (  # noqa: E731
        tool_call("Plan", {"tasks": [{"id": "1", "content": "collect"}]}) if "Plan" in request.tool_names else long
    )
    graph = build_graph(ScriptedChatModel(respond=respond), checkpointer=checkpointer, store=store)
    crashes, wrong = [], 0
    for thread in ODD_THREAD_IDS:
        run = {"configurable": {"thread_id": thread}}
        checkpointer.delete_thread(thread)  # a database used before starts this thread afresh
        try:
            final = graph.invoke({"messages": [("user", "go")]}, run)
            again = graph.get_state(run).values
        except Exception as exc:
            crashes.append(f"{thread[:12]!r}: {type(exc).__name__}: {str(exc)[:60]}")
            continue
        wrong += kept_output(final, store, thread, "1/result") != long or again["tasks"] != final["tasks"]
    return crashes, wrong


def thread_ids(args: argparse.Namespace) -> Finding:
    figures, bad = [], 0
    with tempfile.TemporaryDirectory() as folder, sqlite_parts(folder) as (saver, store):
        crashes, wrong = odd_ids_on(saver, store)
    figures.append(f"SQLite: crashes {len(crashes)}{' ' + str(crashes) if crashes else ''}, wrong {wrong}")
    bad += len(crashes) + wrong
    if args.postgres:
        with open_saver(args.postgres) as (saver, store):
            crashes, wrong = odd_ids_on(saver, store)
        figures.append(f"PostgreSQL: crashes {len(crashes)}{' ' + str(crashes) if crashes else ''}, wrong {wrong}")
        bad += len(crashes) + wrong
    return Finding(bad == 0, f"{len(ODD_THREAD_IDS)} ids; " + "; ".join(figures))


# 8. step_timeout_s -----------------------------------------------------------------------------------------------


def step_timeout(args: argparse.Namespace) -> Finding:
    refused = []
    for value in (math.inf, 1e10, math.nan):
        try:
            AgentConfig(step_timeout_s=value)
        except ValidationError as error:
            refused.append("step_timeout_s" in str(error))
    release = threading.Event()

    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:
            release.wait(60)  # a planner call that never returns (until the probe ends)
        return "no plan came"

    limit = 1.0
    graph = build_graph(ScriptedChatModel(respond=respond), config=AgentConfig(step_timeout_s=limit))
    started = time.perf_counter()
    try:
        final = graph.invoke({"messages": [("user", "plan this")]})
        ended = "ended: " + ("final answer" if final.get("final_answer") else "no answer")
    except Exception as exc:
        ended = f"raised {type(exc).__name__}"
    finally:
        release.set()
    wall = time.perf_counter() - started
    bound = limit * (AgentConfig().model_retries + 1) + 5
    held = len(refused) == 3 and all(refused) and wall <= bound and not ended.startswith("raised")
    return Finding(
        held,
        f"refused with a message naming the field: {sum(refused)}/3; hung planner, step_timeout_s={limit:g}: "
        f"run {ended} after {wall:.1f} s (bound {bound:.0f} s)",
    )


# 9. Web search redirects -----------------------------------------------------------------------------------------


@contextmanager
def http_server(answer) -> Iterator[tuple[str, list[str]]]:
    """A loopback server answering every GET with ``answer(path) -> (status, headers)``; its URL and the paths
    it was asked for."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            asked.append(self.path)
            status, headers = answer(self.path)
            self.send_response(status)
            for name, value in {**headers, "Content-Length": "0"}.items():
                self.send_header(name, value)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", asked
    finally:
        server.shutdown()
        server.server_close()


def search_redirect(args: argparse.Namespace) -> Finding:
    from replangraph.tools.search import internet_search_tool
    from replangraph.tools.search.duckduckgo import DuckDuckGoHTML

    followed = refused = 0
    with http_server(lambda path: (200, {})) as (internal, asked):
        targets = [f"{internal}/metadata", "http://localhost:9/admin", "http://10.0.0.1/", "http://[::1]/"]
        for target in targets:
            with http_server(lambda path, t=target: (302, {"Location": t})) as (search, _):
                search_tool = internet_search_tool(DuckDuckGoHTML(base_url=search + "/html/", timeout_s=2.0))
                reply = search_tool.invoke(
                    {"name": search_tool.name, "args": {"query": "x"}, "id": "1", "type": "tool_call"}
                )
                refused += "redirected to a private or local address" in reply.content
        followed = len(asked)
    return Finding(
        followed == 0 and refused == len(targets),
        f"{len(targets)} redirects (another loopback port, localhost, 10.0.0.1, [::1]): refused with a clear "
        f"message {refused}, requests reaching the internal server {followed}",
    )


# 12. Retries per failed step -------------------------------------------------------------------------------------


def is_planner_request(body: dict) -> bool:
    """A request of the planner (offered the Plan tool; not the replanner, whose system prompt names it)."""
    tools = {t["function"]["name"] for t in body.get("tools") or []}
    system = " ".join(str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "system")
    return "Plan" in tools and "replanner" not in system


def retries_per_step(args: argparse.Namespace) -> Finding:
    def plan(request: ScriptedRequest):
        return tool_call("Plan", {"tasks": [{"id": "1", "content": "anything"}]})

    config = AgentConfig(retry_backoff_s=0.001)
    with FailingLoopback(plan, lambda: True) as server, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the warning about both retrying is what is measured
        graph = build_graph(chat_openai(server.base_url), config=config)  # ChatOpenAI's own max_retries: default
        started = time.perf_counter()
        try:
            graph.invoke({"messages": [("user", "plan this")]}, {"recursion_limit": 50})
            ended = "ended"
        except Exception as exc:
            ended = f"raised {type(exc).__name__}"
        wall = time.perf_counter() - started
    planner = sum(map(is_planner_request, server.requests))
    expected = config.model_retries + 1
    return Finding(
        planner == expected,
        f"planner step: {planner} HTTP requests (expected {expected}); whole run {len(server.requests)} requests, "
        f"{ended} after {wall:.1f} s",
    )
