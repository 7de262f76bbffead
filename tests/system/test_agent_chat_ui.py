"""LangChain's agent-chat-ui (the real Next.js app) in headless Chromium, against ``langgraph dev`` serving replangraph.

Opt-in: ``pytest -m chat_ui``, after ``.ci/chat-ui`` has installed Debian's chromium, Playwright for Python and
the UI (sources at a pinned commit, its packages, its production build) into a cache outside the repository.
Without them the test is skipped and says what is missing (under CI it fails instead).

The servers are test_langgraph_dev's: ``langgraph dev`` (`langgraph_dev_server`) with the scripted model of
`langgraph_dev_script` on a loopback OpenAI-compatible server; nothing leaves the machine. The UI runs with
``next start`` on 127.0.0.1 and is given the server's URL and the assistant id in the page's query
(``?apiUrl=...&assistantId=replangraph``), as its setup form would set them. A user types the goal; the run asks
two questions, one after the other; the first is answered in the chat box, the second in the form the UI draws.
Screenshots of the three points are kept in the test's tmp_path (the path is printed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from langgraph_dev_script import FONT_QUESTION, MODEL, QUESTION, STYLE_MARK, STYLE_TASK, SYNTHESIS, respond, tagged_goal
from langgraph_dev_script import requests_of as loopback_requests
from langgraph_dev_script import tool_names as offered_tools
from langgraph_dev_server import GRAPH, free_port, langgraph_dev, under_ci, wait_until_ready
from openai_loopback import OpenAILoopback

from benchmarks.server_parallel import stop

pytestmark = pytest.mark.chat_ui  # not `system`: `pytest -m system` (and CI) leave it out unless asked

UI_ENV = "REPLANGRAPH_CHAT_UI"
CHROMIUM_ENV = "REPLANGRAPH_CHROMIUM"
STEP_TIMEOUT_MS = 60_000  # one run of the graph, the server's queue (it picks runs up about once a second) included
PREFIX = "Please confirm: "  # AgentConfig.question_prefix: the question as the interrupt (and the form) shows it


def cache_dirs() -> list[Path]:
    """Where .ci/chat-ui puts the UI: $REPLANGRAPH_CACHE, else /var/cache/replangraph, else ~/.cache/replangraph."""
    found = [Path(os.environ["REPLANGRAPH_CACHE"])] if os.environ.get("REPLANGRAPH_CACHE") else []
    return [*found, Path("/var/cache/replangraph"), Path.home() / ".cache" / "replangraph"]


def missing(reason: str) -> None:
    """Skip with what is missing and how to get it, or fail under CI, where a test that did not run must not pass."""
    reason = f"{reason}; run .ci/chat-ui to install what `pytest -m chat_ui` needs"
    if under_ci():
        pytest.fail(f"the chat UI test cannot run under CI: {reason}", pytrace=False)
    pytest.skip(reason)


# ----------------------------------------------------------------------------- what the test needs


@pytest.fixture(scope="module")
def ui_dir() -> Path:
    """agent-chat-ui, built: $REPLANGRAPH_CHAT_UI, else agent-chat-ui/ in the cache of .ci/chat-ui."""
    places = [Path(os.environ[UI_ENV])] if os.environ.get(UI_ENV) else [d / "agent-chat-ui" for d in cache_dirs()]
    for place in places:
        if (place / ".next" / "BUILD_ID").is_file() and (place / "node_modules" / "next").is_dir():
            return place
    missing(f"agent-chat-ui is not built in {' or '.join(map(str, places))}")


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if not found:
        missing("there is no node executable")
    return found


@pytest.fixture(scope="module")
def chromium() -> str:
    """$REPLANGRAPH_CHROMIUM, else Debian's chromium (Playwright's own browsers are not downloaded)."""
    named = os.environ.get(CHROMIUM_ENV)
    found = shutil.which(named) if named else shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        missing(f"there is no chromium executable ({named or 'apt-get install chromium'})")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing("Playwright for Python is not installed")
    return found


# ----------------------------------------------------------------------------- the servers and the browser


@pytest.fixture(scope="module")
def loopback() -> Iterator[OpenAILoopback]:
    with OpenAILoopback(respond, models=[MODEL]) as server:
        yield server


@pytest.fixture(scope="module")
def server(loopback: OpenAILoopback, ui_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a ``langgraph dev`` server (started once the UI is known to be there), its model the loopback."""
    with langgraph_dev(loopback.base_url, tmp_path_factory.mktemp("langgraph-dev") / "server.log") as url:
        yield url


@pytest.fixture(scope="module")
def ui(ui_dir: Path, node: str, server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of the built UI, served by ``next start`` on 127.0.0.1."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("agent-chat-ui") / "next.log"
    command = [node, "node_modules/next/dist/bin/next", "start", "--hostname", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "NEXT_TELEMETRY_DISABLED": "1"}
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=ui_dir, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        took = wait_until_ready(process, f"{url}/", log, "next start")
        print(f"\nagent-chat-ui ({ui_dir}) ready at {url} in {took:.1f}s (log: {log})")
        yield url
    finally:
        stop(process)


@pytest.fixture
def page(chromium: str, ui: str):
    """A page of headless Chromium, tall enough to show the whole conversation; fails the test on a page error."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 2000})
            page.set_default_timeout(STEP_TIMEOUT_MS)
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            yield page
            assert errors == [], f"the page raised: {errors}"
        finally:
            browser.close()


# ----------------------------------------------------------------------------- reading the page


def message_rows(page):
    """The conversation's messages as the UI draws them, in order: AI rows (``mr-auto``), human rows (``ml-auto``)."""
    return page.locator("div.group.mr-auto, div.group.ml-auto")


def row_kinds(page) -> list[str]:
    """``"human"`` or ``"ai"`` for each message row, in order."""
    script = "rows => rows.map(row => row.classList.contains('ml-auto') ? 'human' : 'ai')"
    return message_rows(page).evaluate_all(script)


def field(scope, label: str):
    """The text box under a field's label in the UI's HITL form (``Question``, ``Answer``, ``Reason``)."""
    return scope.locator(f"xpath=.//p[normalize-space()='{label}']/following-sibling::textarea")


def shoot(page, folder: Path, name: str) -> Path:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path))
    return path


# ----------------------------------------------------------------------------- the test


def test_a_question_answered_in_the_chat_box_and_the_next_in_its_form(page, ui, server, loopback, tmp_path):
    """The first of two questions is answered by typing into the chat box: the thread then ends with an AI
    message ("Your answer to ... went to subtask 1 ..."), and agent-chat-ui, which draws an interrupt's form only
    under a last message of type ``ai``, draws the second question's form under it. The form answers it; the run
    finishes and the final answer is the last message."""
    from langgraph_sdk import get_sync_client
    from playwright.sync_api import expect

    shots = tmp_path / "screenshots"
    shots.mkdir()
    timings: dict[str, float] = {}
    goal, tag = tagged_goal(f"Write a report heading; ask me for the {STYLE_MARK}.")
    page.goto(f"{ui}/?{urlencode({'apiUrl': server, 'assistantId': GRAPH})}")
    chat_box = page.get_by_placeholder("Type your message...")
    rows = message_rows(page)

    # 1. The goal, typed and sent with Enter. The run pauses on the first question: its form under the plan message.
    started = time.monotonic()
    chat_box.fill(goal)
    chat_box.press("Enter")
    last = rows.last
    expect(field(last, "Question")).to_have_value(PREFIX + QUESTION, timeout=STEP_TIMEOUT_MS)
    timings["goal to first form"] = time.monotonic() - started
    expect(rows).to_have_count(2)
    assert row_kinds(page) == ["human", "ai"]  # the goal, the plan
    expect(rows.first).to_contain_text(goal)
    expect(last).to_contain_text("Plan: 0 of 1 done")
    expect(last).to_contain_text(f"waiting for your answer: {QUESTION}")
    expect(field(last, "Answer")).to_have_value("")
    expect(page.get_by_text("ask_user", exact=True)).to_have_count(1)  # the form's title: one form on the page
    first_shot = shoot(page, shots, "1-first-question-form")

    # 2. The answer typed into the chat box, not the form. The thread ends with an AI message, and the next
    # question's form is drawn under it.
    started = time.monotonic()
    chat_box.fill("teal")
    chat_box.press("Enter")
    reply = f'Your answer to "{QUESTION}" went to subtask 1 ({STYLE_TASK}); the run goes on.'
    expect(last).to_contain_text(reply, timeout=STEP_TIMEOUT_MS)  # `last` is found again: the fourth row now
    expect(field(last, "Question")).to_have_value(PREFIX + FONT_QUESTION)
    timings["typed answer to next form"] = time.monotonic() - started
    expect(rows).to_have_count(4)
    assert row_kinds(page) == ["human", "ai", "human", "ai"]  # the goal, the plan, "teal", the reply
    expect(rows.nth(2).get_by_text("teal", exact=True)).to_be_visible()
    expect(rows.nth(1)).to_contain_text(f"waiting for your answer: {FONT_QUESTION}")  # the plan, updated in place
    expect(page.get_by_text("ask_user", exact=True)).to_have_count(1)  # only under the last message
    reply_box = last.get_by_text(reply).bounding_box()
    form_box = field(last, "Question").bounding_box()
    assert reply_box and form_box and form_box["y"] >= reply_box["y"] + reply_box["height"], "the form is not under it"
    second_shot = shoot(page, shots, "2-typed-answer-then-next-form")

    # 3. The second question answered in the form (its Answer field, then Submit). The run finishes: the final
    # answer is the last message, and no form is left.
    started = time.monotonic()
    field(last, "Answer").fill("serif")
    last.get_by_role("button", name="Submit", exact=True).click()
    expect(last).to_contain_text("RESULT heading style: teal, serif", timeout=STEP_TIMEOUT_MS)
    timings["form answer to final answer"] = time.monotonic() - started
    expect(last).to_contain_text(SYNTHESIS)
    expect(rows).to_have_count(5)
    assert row_kinds(page) == ["human", "ai", "human", "ai", "ai"]  # ..., the reply, the final answer
    expect(rows.nth(1)).to_contain_text("Plan: 1 of 1 done")
    expect(page.get_by_text("ask_user", exact=True)).to_have_count(0)
    expect(page.locator("textarea")).to_have_count(1)  # the chat box alone
    third_shot = shoot(page, shots, "3-final-answer")

    # What the server holds: both answers reached the subtask, the form's as the answer, and one plan was made.
    thread_id = parse_qs(urlsplit(page.url).query)["threadId"][0]
    client = get_sync_client(url=server, api_key=None, timeout=60)
    state = client.threads.get_state(thread_id)
    assert state["values"]["tasks"]["1"]["clarifications"] == [
        {"question": QUESTION, "answer": "teal"},
        {"question": FONT_QUESTION, "answer": "serif"},
    ]
    assert state["values"]["final_answer"] == f"{SYNTHESIS}\nRESULT heading style: teal, serif"
    assert state["interrupts"] == [] and client.threads.get(thread_id)["status"] == "idle"
    assert len([r for r in loopback_requests(loopback, tag) if "Plan" in offered_tools(r)]) == 1
    assert loopback.errors == [], "the loopback refused requests"

    print("\n" + ", ".join(f"{what}: {took:.1f}s" for what, took in timings.items()))
    print(f"screenshots: {first_shot}, {second_shot}, {third_shot}")
