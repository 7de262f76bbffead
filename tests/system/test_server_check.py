"""The model server checked before a run (replangraph.app.server) and the Studio factory's model and tools
(replangraph.app.studio): a refused key, OpenAI's URL without a base URL, a base URL without /v1, the one model
a local server lists, a tools module that fails at import. Servers are loopback ones; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import inspect
import socket
import sys
import threading
from collections.abc import Iterator

import pytest
from cli_helpers import record_requests, record_waits
from openai_loopback import OpenAILoopback

from replangraph.app import cli, server, studio


def no_answer(request):
    raise AssertionError("no chat request is expected")


def closed_url() -> str:
    """The URL of a loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch) -> Iterator[None]:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "REPLANGRAPH_MODEL"):
        monkeypatch.delenv(name, raising=False)
    studio._only_model.cache_clear()
    yield
    studio._only_model.cache_clear()


@pytest.fixture
def loopback() -> Iterator[OpenAILoopback]:
    with OpenAILoopback(no_answer, models=["local-llama"]) as found:
        yield found


# A module that fails at import (item 2)


def test_a_tools_module_that_fails_at_import_is_a_value_error_naming_it(monkeypatch, tmp_path):
    (tmp_path / "boomtools.py").write_text("raise RuntimeError('boom at import')\n")
    (tmp_path / "finetools.py").write_text("TOOLS = []\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    with pytest.raises(ValueError) as raised:
        studio.load_attr("boomtools:TOOLS", "tools")
    assert str(raised.value) == (
        "cannot load tools 'boomtools:TOOLS': importing boomtools failed (RuntimeError: boom at import)"
    )
    monkeypatch.setenv("REPLANGRAPH_TOOLS", "boomtools:TOOLS")
    with pytest.raises(ValueError, match="importing boomtools failed"):
        studio.make_graph({})
    # the other failures keep their messages
    with pytest.raises(ValueError, match=r"^cannot load tools 'nosuchmodule_x:T': No module named 'nosuchmodule_x'$"):
        studio.load_attr("nosuchmodule_x:T", "tools")
    with pytest.raises(ValueError, match=r"^cannot load tools 'finetools:NOPE': module 'finetools' has no attribute"):
        studio.load_attr("finetools:NOPE", "tools")
    assert studio.load_attr("finetools:TOOLS", "tools") == []


# A key the server refuses (item 4)


@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.system
def test_a_refused_key_says_to_set_the_key_not_to_pass_a_model(loopback, status, monkeypatch, capsys):
    loopback.models_status = status
    url = loopback.base_url
    expected = f"The model server at {url} refused the API key (HTTP {status}): set OPENAI_API_KEY to a key it accepts."
    for settings in ({"base_url": url}, {"base_url": url, "model": "m"}):  # a named model does not help
        with pytest.raises(server.KeyRefused) as raised:
            server.check_server(settings)
        assert str(raised.value) == expected
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    assert cli.main(["run", "anything", "--base-url", url, "--model", "m"]) == 2  # a usage error
    assert capsys.readouterr().err == expected + "\n"
    assert loopback.requests == []


# OpenAI, checked too when no base URL is given (item 5)


def test_without_a_base_url_openai_is_checked_when_a_key_is_set(monkeypatch, capsys, tmp_path):
    down = closed_url()
    monkeypatch.setattr(server, "OPENAI_URL", down)
    assert server.check_server({}) is None  # no key: nothing to ask (the CLI says a key is missing first)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    expected = (
        f"The model server at {down} did not answer (connection refused): check your network connection or pass "
        "--base-url."
    )
    with pytest.raises(server.ServerDown) as raised:
        server.check_server({"model": "gpt-4.1"})
    assert str(raised.value) == expected
    db = tmp_path / "runs.sqlite"
    sent, waits = record_requests(monkeypatch), record_waits(monkeypatch)
    assert cli.main(["run", "anything", "--db", str(db)]) == 4
    assert sent == [f"GET {down}/models"] and waits == []  # at once: one probe, no model call, no retry
    assert capsys.readouterr().err == expected + "\n"
    assert not db.exists()  # nothing ran


@pytest.mark.system
def test_openais_answer_is_checked_for_the_key_and_its_list_not_used(loopback, monkeypatch):
    monkeypatch.setattr(server, "OPENAI_URL", loopback.base_url)
    loopback.models = ["gpt-4o-mini", "gpt-4.1", "o3"]
    assert server.check_server({}) is None  # no key: not asked
    assert loopback.gets == []
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert server.check_server({}) is None  # several models, but OpenAI's default (or --model) is used
    assert loopback.gets == ["/v1/models"]
    loopback.models_status = 401
    with pytest.raises(server.KeyRefused, match=r"refused the API key \(HTTP 401\): set OPENAI_API_KEY"):
        server.check_server({})


def test_the_fix_depends_on_whether_the_server_is_openais():
    assert server.is_openai("https://api.openai.com/v1")
    assert server.is_openai("https://API.openai.com:443/v1/")
    assert not server.is_openai("http://api.openai.com:8000/v1")
    assert not server.is_openai("http://localhost:8000/v1")
    assert not server.is_openai("http://localhost:port/v1")
    openai, local = "https://api.openai.com/v1", "http://localhost:8000/v1"
    assert server.fix_phrase(openai) == "check your network connection or pass --base-url"
    assert server.fix_phrase(openai, "--base-url") == "check your network connection or fix --base-url"
    assert server.fix_phrase(local, "$OPENAI_BASE_URL") == "start it or fix $OPENAI_BASE_URL"
    assert server.fix_phrase(local) == "start it or fix --base-url"


def test_the_sentence_for_a_server_lost_mid_run_names_the_fix(monkeypatch):
    assert server.lost_server_message({}) == (
        "The model server at https://api.openai.com/v1 stopped answering during the run (connection error): "
        "check your network connection and run the goal again."
    )
    assert server.lost_server_message({"base_url": "http://user:secret@localhost:8000/v1/"}) == (
        "The model server at http://user:***@localhost:8000/v1 stopped answering during the run (connection "
        "error): start it and run the goal again."
    )
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    assert "localhost:8000/v1 stopped answering" in server.lost_server_message({})


# A base URL without /v1 (item 12)


@pytest.mark.system
def test_a_404_from_a_url_without_v1_suggests_adding_it(loopback):
    root = loopback.base_url.removesuffix("/v1")
    with pytest.raises(server.NoModel) as raised:
        server.check_server({"base_url": root + "/"})
    assert str(raised.value) == (
        f"The server at {root} answered GET /models with HTTP 404 (did you mean {root}/v1?), so replangraph cannot "
        "tell which model to use: pass --model NAME."
    )
    assert server.check_server({"base_url": root + "/v1/"}) == "local-llama"
    with pytest.raises(server.NoModel) as raised:  # a /v1 URL that answers 404 gets no hint
        server.check_server({"base_url": root + "/v1/nothing/v1"})
    assert "HTTP 404, so" in str(raised.value)


# Studio's model: the one a local server lists (item 6)


@pytest.mark.system
def test_studio_uses_the_one_model_a_local_server_lists(loopback, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.base_url)
    assert studio.chat_model_from_env().model_name == "local-llama"  # not gpt-4o-mini
    assert studio.chat_model_from_env().model_name == "local-llama"
    graph = studio.make_graph({})
    assert graph.builder.nodes["executor"].runnable.func.profiles["default"].model is None  # the graph's model
    assert loopback.gets == ["/v1/models"]  # asked once: make_graph runs per run
    assert studio.chat_model_from_env("chosen").model_name == "chosen"
    monkeypatch.setenv("REPLANGRAPH_MODEL", "from-env")
    assert studio.chat_model_from_env().model_name == "from-env"
    assert loopback.gets == ["/v1/models"]


@pytest.mark.system
def test_studio_asks_again_until_the_server_names_one_model(loopback, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.base_url)
    loopback.models = []
    assert studio.chat_model_from_env().model_name == studio.DEFAULT_MODEL
    loopback.models = ["a", "b"]
    assert studio.chat_model_from_env().model_name == studio.DEFAULT_MODEL
    loopback.models = ["late-model"]
    assert studio.chat_model_from_env().model_name == "late-model"
    assert studio.chat_model_from_env().model_name == "late-model"
    assert loopback.gets == ["/v1/models"] * 3  # not cached until found


@pytest.mark.system
def test_studio_loads_its_graph_while_the_server_is_down(monkeypatch):
    down = closed_url()
    monkeypatch.setenv("OPENAI_BASE_URL", down)
    assert studio.served_model(down) is None
    studio.make_graph({})  # langgraph dev loads the graph at startup: it does not fail
    assert studio.chat_model_from_env().model_name == studio.DEFAULT_MODEL
    with OpenAILoopback(no_answer, models_status=401) as refusing:
        assert studio.served_model(refusing.base_url) is None


@pytest.mark.system
def test_in_an_event_loop_the_graph_is_built_in_a_thread(loopback, monkeypatch):
    """The LangGraph server calls make_graph on its event loop, where `langgraph dev` refuses blocking calls."""
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.base_url)
    loop_thread = []

    async def serve():
        loop_thread.append(threading.get_ident())
        made = studio.make_graph({})
        assert inspect.isawaitable(made)
        return await made

    seen = []
    monkeypatch.setattr(studio, "served_model", lambda url: seen.append(threading.get_ident()) or "local-llama")
    graph = asyncio.run(serve())
    assert "executor" in graph.builder.nodes
    assert seen and seen[0] != loop_thread[0]


@pytest.mark.system
def test_on_an_event_loop_chat_model_from_env_asks_at_the_first_request_off_the_loop(loopback, monkeypatch):
    """A langgraph.json factory of your own calls chat_model_from_env() on the server's loop: nothing is
    asked there; the model asks at its first request (sync: in its thread; async: in a worker thread)."""
    loopback.responder = lambda request: "ok"
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.base_url)
    loopback.models = []  # not up yet: asked again at the next request
    seen = []
    served = studio.served_model
    monkeypatch.setattr(studio, "served_model", lambda url: seen.append(threading.get_ident()) or served(url))

    async def build_and_ask():
        model = studio.chat_model_from_env()
        assert seen == [] and model.model_name == studio.DEFAULT_MODEL
        first = await model.ainvoke("hi")
        loopback.models = ["late-model"]
        second = await model.ainvoke("hi")
        return model, threading.get_ident(), first, second

    model, loop_thread, *_ = asyncio.run(build_and_ask())
    assert len(seen) == 2 and loop_thread not in seen
    assert [r["model"] for r in loopback.requests] == [studio.DEFAULT_MODEL, "late-model"]
    model.invoke("hi")  # found: not asked again
    assert len(seen) == 2 and loopback.requests[-1]["model"] == "late-model"


def test_a_base_url_with_a_query_string_lists_models_and_answers_with_its_secrets_masked():
    """The query stays a query (``/models`` goes before it; the client sends it as its default query), and every
    message shows its secret-looking values as ``***``."""
    with OpenAILoopback(lambda request: "hello", models=["local-llama"]) as served:
        url = served.base_url.rstrip("/") + "?api-version=2024&api_key=SECRET-1&token=SECRET-2"
        assert server.listed_models(url)[0] == ["local-llama"]
        assert served.gets[-1].startswith("/v1/models?api-version=2024")
        model = studio.chat_model_from_env(base_url=url)
        assert model.model_name == "local-llama" and "?" not in str(model.openai_api_base)
        assert model.default_query == {"api-version": "2024", "api_key": "SECRET-1", "token": "SECRET-2"}
        assert model.invoke("hi").content == "hello"  # /chat/completions under the path, the query as parameters
    label = server.url_label(url)
    assert "SECRET" not in label and "api_key=***" in label and "token=***" in label and "api-version=2024" in label


def test_a_database_url_shows_its_password_and_secret_parameters_masked():
    from replangraph.durable import masked_url

    shown = masked_url("postgresql://me:PW@db:5432/runs?sslmode=require&password=PW2&sslkey=KEY")
    assert "PW" not in shown and "KEY" not in shown and "sslmode=require" in shown and "me:***@db" in shown
