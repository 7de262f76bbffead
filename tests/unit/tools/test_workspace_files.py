"""write_file, read_file, list_files: a workspace the agent cannot leave, read and written in bounded pieces."""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import ToolException
from scripting import make_model, plan_of, run, subtask_of

from replangraph import AgentConfig, build_graph
from replangraph.builder import with_workspace
from replangraph.config import AgentProfile, resolve_profiles
from replangraph.queue.tasks import new_task
from replangraph.testing import tool_call
from replangraph.tools import REVIEW_TOOL, ReplanSession, replan_toolkit
from replangraph.tools.files import workspace_files as workspace_module
from replangraph.tools.files.workspace_files import resolve_inside, workspace_tools

toolkit_module = importlib.import_module(
    "replangraph.tools.replan_toolkit.toolkit"
)  # the package's attribute: a function


def tools(root, **limits):
    """The tools on ``root`` itself (shared by every thread): what these tests check is the same per folder."""
    return {t.name: t for t in workspace_tools(root, shared=True, **limits)}


def call(tool, **args) -> ToolMessage:
    """The tool called the way the graph's tools node calls it: with a whole tool call."""
    return tool.invoke({"name": tool.name, "args": args, "id": "c1", "type": "tool_call"})


def snapshot(folder):
    """Every path under ``folder`` with its bytes (None for folders), to show that nothing changed."""
    found = {}
    for top, dirs, names in os.walk(folder):
        for name in dirs + names:
            full = os.path.join(top, name)
            found[os.path.relpath(full, folder)] = None if os.path.isdir(full) else Path(full).read_bytes()
    return found


@pytest.fixture
def ws(tmp_path):
    return tools(tmp_path / "ws")


def test_written_files_read_back_and_are_listed_sorted_with_sizes(tmp_path, ws):
    assert (tmp_path / "ws").is_dir()  # the root is created
    reply = call(ws["write_file"], path="notes/deep/er/result.md", content="héllo\nworld\n")
    assert reply.status == "success" and reply.content == "Wrote 13 bytes to notes/deep/er/result.md."
    call(ws["write_file"], path="b.txt", content="b")
    call(ws["write_file"], path="a.txt", content="")
    assert (tmp_path / "ws/notes/deep/er/result.md").read_text() == "héllo\nworld\n"
    text = call(ws["read_file"], path="notes/deep/er/result.md").content
    assert text == "notes/deep/er/result.md, characters 0-12 of 12 (the end):\nhéllo\nworld\n"
    assert call(ws["read_file"], path="a.txt").content == "a.txt is empty."
    listing = call(ws["list_files"]).content
    assert (
        listing
        == "Files in the workspace (3):\n- a.txt (0 bytes)\n- b.txt (1 bytes)\n- notes/deep/er/result.md (13 bytes)"
    )
    assert call(ws["list_files"], path="notes/deep").content.endswith("\n- notes/deep/er/result.md (13 bytes)")


def test_append_adds_to_the_end_and_a_plain_write_replaces(tmp_path, ws):
    call(ws["write_file"], path="log.txt", content="one\n")
    reply = call(ws["write_file"], path="log.txt", content="two\n", append=True)
    assert reply.content == "Appended 4 bytes to log.txt (now 8 bytes)."
    call(ws["write_file"], path="log.txt", content="three\n", mode="a")  # the open() mode a model may send
    assert (tmp_path / "ws/log.txt").read_text() == "one\ntwo\nthree\n"
    call(ws["write_file"], path="log.txt", content="fresh", append="false")
    assert (tmp_path / "ws/log.txt").read_text() == "fresh"


def outside_links(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "out_file").symlink_to(outside / "secret.txt")
    (root / "out_dir").symlink_to(outside, target_is_directory=True)
    (root / "inner").mkdir()
    (root / "inner" / "up").symlink_to("../../outside", target_is_directory=True)  # a relative link, one level down
    return root, outside


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../escape.txt", "leads outside the workspace through '..'"),
        ("notes/../../escape.txt", "leads outside the workspace through '..'"),
        ("..", "leads outside the workspace through '..'"),
        ("/tmp/escape.txt", "path must be relative to the workspace, e.g. notes/result.md"),
        ("~/escape.txt", "path must be relative to the workspace"),
        ("out_file", "leads outside the workspace through a symbolic link"),
        ("out_dir/new.txt", "leads outside the workspace through a symbolic link"),
        ("out_dir/secret.txt", "leads outside the workspace through a symbolic link"),
        ("inner/up/new.txt", "leads outside the workspace through a symbolic link"),
        ("bad\x00name.txt", "NUL byte"),
        ("", "the path is empty"),
        (".", "names the workspace folder itself"),
        ("notes/..", "names the workspace folder itself"),
    ],
)
def test_paths_leaving_the_workspace_are_refused_and_nothing_is_written(tmp_path, path, message):
    root, outside = outside_links(tmp_path)
    before = snapshot(tmp_path)
    ws = tools(root)
    reply = call(ws["write_file"], path=path, content="x")
    assert reply.status == "error" and message in reply.content, reply.content
    assert snapshot(tmp_path) == before
    if path not in ("", ".", "notes/.."):
        read = call(ws["read_file"], path=path)
        assert read.status == "error" and message in read.content and "TOP SECRET" not in read.content
    with pytest.raises(ToolException, match=re.escape(message)):
        resolve_inside(root, path, writing=True)


def test_folders_through_links_out_cannot_be_listed_and_links_out_are_marked(tmp_path):
    root, _ = outside_links(tmp_path)
    ws = tools(root)
    assert "through a symbolic link" in call(ws["list_files"], path="out_dir").content
    listing = call(ws["list_files"]).content
    assert "- out_file (link leading outside the workspace)" in listing and "secret" not in listing
    assert "- out_dir (link leading outside the workspace)" in listing


def test_links_that_stay_inside_work(tmp_path, ws):
    call(ws["write_file"], path="real/a.txt", content="inside")
    (tmp_path / "ws/alias").symlink_to(tmp_path / "ws/real", target_is_directory=True)
    assert call(ws["read_file"], path="alias/a.txt").content.endswith("\ninside")
    assert resolve_inside(tmp_path / "ws", "alias/a.txt") == (tmp_path / "ws/real/a.txt").resolve()
    assert resolve_inside(tmp_path / "ws", "notes/../a.txt") == (tmp_path / "ws/a.txt").resolve()


def test_an_absolute_path_inside_the_workspace_is_refused_with_the_relative_path_to_use(tmp_path, ws):
    reply = call(ws["write_file"], path=str(tmp_path / "ws/notes/a.md"), content="x")
    assert reply.status == "error" and "use 'notes/a.md'" in reply.content
    assert not (tmp_path / "ws/notes").exists()


def test_writes_over_the_size_limit_are_refused_whole(tmp_path):
    ws = tools(tmp_path / "ws", max_write_bytes=10)
    big = call(ws["write_file"], path="new/big.txt", content="x" * 11)
    assert big.status == "error" and "over the 10-byte limit" in big.content and "nothing was written" in big.content
    assert not (tmp_path / "ws/new").exists()
    call(ws["write_file"], path="a.txt", content="é" * 5)  # 10 bytes: the limit counts bytes, not characters
    grown = call(ws["write_file"], path="a.txt", content="y", append=True)
    assert grown.status == "error" and "10 + 1 bytes" in grown.content
    assert (tmp_path / "ws/a.txt").read_text() == "é" * 5


def test_reads_come_in_pages_that_say_where_the_next_one_starts(tmp_path):
    text = "".join(f"{n:05d}\n" for n in range(2_000))  # 12,000 characters, every offset recognisable
    ws = tools(tmp_path / "ws", max_read_chars=1_000)
    call(ws["write_file"], path="long.txt", content=text)
    pages, offset = [], 0
    while True:
        page = call(ws["read_file"], path="long.txt", offset=offset).content
        assert len(page) <= 1_000
        header, body = page.split("\n", 1)
        more = re.search(r'\n\[… more follows; call read_file with path="long.txt", offset=(\d+) to read on\]$', body)
        if not more:
            assert header.endswith(f"of {len(text)} (the end):")
            pages.append(body)
            break
        assert header == f"long.txt (12000 bytes), characters {offset}-{more.group(1)}:"
        pages.append(body[: more.start()])
        offset = int(more.group(1))
    assert "".join(pages) == text and len(pages) > 10
    assert call(ws["read_file"], path="long.txt", offset="6,000", limit="12").content.startswith(
        "long.txt (12000 bytes), characters 6000-6012:\n01000\n01001\n\n[… more follows"
    )
    past = call(ws["read_file"], path="long.txt", offset=20_000)
    assert past.status == "error" and "past the end of long.txt, which has 12000 characters" in past.content


def test_binary_files_are_reported_not_decoded(tmp_path, ws):
    (tmp_path / "ws/image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(range(256)))
    (tmp_path / "ws/latin.txt").write_bytes("café au lait, s'il vous plaît\n".encode("latin-1"))
    assert (
        call(ws["read_file"], path="image.png").content
        == "image.png is a binary file (266 bytes); read_file shows text files only."
    )
    assert "caf\ufffd au lait" in call(ws["read_file"], path="latin.txt").content  # mostly text: decoded


@pytest.mark.parametrize(
    ("args", "written"),
    [
        ({"path": "a.md", "content": ["line 1", "line 2"]}, "line 1\nline 2"),
        ({"filename": "a.md", "text": "plain"}, "plain"),
        ({"file": ["a.md"], "data": "from a list"}, "from a list"),
        ({"file_path": " 'a.md' ", "content": [{"type": "text", "text": "from a block"}]}, "from a block"),
        ({"path": {"type": "text", "text": "a.md"}, "content": "path in a block"}, "path in a block"),
        ({"path": "a.md", "content": {"type": "text", "text": "one block"}}, "one block"),
        (
            {"path": "a.md", "content": {"total": 3, "items": [1, 2]}},
            '{\n  "total": 3,\n  "items": [\n    1,\n    2\n  ]\n}',
        ),
        ({"path": "a.md", "content": [{"name": "x"}, 2]}, '[\n  {\n    "name": "x"\n  },\n  2\n]'),
    ],
)
def test_sloppy_arguments_are_understood(tmp_path, ws, args, written):
    reply = call(ws["write_file"], **args)
    assert reply.status == "success", reply.content
    assert (tmp_path / "ws/a.md").read_text() == written
    assert call(ws["read_file"], filename="a.md").content.endswith("\n" + written)


def test_bad_calls_come_back_as_tool_errors_not_crashes(tmp_path, ws):
    missing = call(ws["write_file"], content="no path")
    assert missing.status == "error" and "path" in missing.content and "Nothing was changed" in missing.content
    assert call(ws["read_file"], path="nope.md").status == "error"
    call(ws["write_file"], path="notes/a.md", content="x")
    assert "is a folder" in call(ws["read_file"], path="notes").content
    assert "is a folder" in call(ws["write_file"], path="notes", content="x").content
    blocked = call(ws["write_file"], path="notes/a.md/b.md", content="x")
    assert blocked.status == "error" and "is a file, not a folder" in blocked.content
    assert isinstance(missing, ToolMessage) and missing.tool_call_id == "c1" and missing.name == "write_file"


def test_long_listings_are_capped(tmp_path):
    ws = tools(tmp_path / "ws", max_read_chars=2_000)
    for n in range(300):
        (tmp_path / "ws" / f"f{n:03d}.txt").write_text("x")
    listing = call(ws["list_files"]).content
    assert len(listing) <= 2_000 and listing.startswith("Files in the workspace (300):\n- f000.txt (1 bytes)")
    assert re.search(r"\(… \d+ more not shown; list a subfolder", listing)
    assert call(tools(tmp_path / "empty")["list_files"]).content == "No files in the workspace."


def test_the_review_of_a_real_run_lists_what_the_agent_wrote(tmp_path):
    root = tmp_path / "ws"
    reviews = []

    def work(request):
        if subtask_of(request) != "write the notes":
            return "nothing to do"
        if not request.called("write_file"):
            return tool_call("write_file", {"filename": "notes/result.md", "content": ["# Notes", "all done"]})
        if not request.called(REVIEW_TOOL):
            return tool_call(REVIEW_TOOL, {})
        reviews.append(request.last_result(REVIEW_TOOL))
        return "notes written"

    model = make_model(plan_of({"id": "1", "content": "write the notes"}), work)
    graph = build_graph(model, tools=workspace_tools(root))  # the review's folder comes from the tools
    state, _ = run(graph)
    assert state["tasks"]["1"]["status"] == "completed"
    assert (root / "t/notes/result.md").read_text() == "# Notes\nall done"  # thread "t" has its own folder
    assert reviews and "Workspace files (paths for read_file/write_file):" in reviews[-1]
    assert "- notes/result.md (16 bytes)" in reviews[-1] and str(tmp_path) not in reviews[-1]


def test_the_review_folder_is_taken_from_the_tools_only_when_they_name_one(tmp_path):
    one, two = workspace_tools(tmp_path / "one"), workspace_tools(tmp_path / "two")
    found = with_workspace(AgentConfig(), resolve_profiles(None, one)).workspace_dir
    assert found == str((tmp_path / "one").resolve() / "{thread}")  # each thread's own folder
    shared = with_workspace(AgentConfig(), resolve_profiles(None, workspace_tools(tmp_path / "s", shared=True)))
    assert shared.workspace_dir == str((tmp_path / "s").resolve())
    both = resolve_profiles({"a": AgentProfile(tools=one), "b": AgentProfile(tools=two)}, ())
    assert with_workspace(AgentConfig(), both).workspace_dir is None  # which one? the user says
    assert with_workspace(AgentConfig(workspace_dir="mine"), resolve_profiles(None, one)).workspace_dir == "mine"


@pytest.mark.parametrize("name", ["write_file", "read_file", "list_files"])
def test_os_errors_are_tool_errors_without_the_absolute_path(tmp_path, ws, name):
    reply = call(ws[name], path="n" * 300, content="x")  # over the file system's name length
    outcome = {"write_file": "nothing was changed", "read_file": "nothing was read"}.get(name, "nothing was listed")
    assert reply.status == "error" and reply.content.startswith(f"{name} failed: File name too long; {outcome}")
    assert str(tmp_path) not in reply.content


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_a_tool_error(tmp_path, ws):
    call(ws["write_file"], path="locked.txt", content="x")
    (tmp_path / "ws/locked.txt").chmod(0)
    assert call(ws["read_file"], path="locked.txt").content == "read_file failed: Permission denied; nothing was read"


def test_a_refused_open_is_a_tool_error_as_root_too(tmp_path, ws, monkeypatch):
    call(ws["write_file"], path="locked.txt", content="x")

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / "ws/locked.txt"))

    monkeypatch.setattr(workspace_module, "open_confined", refused)
    assert call(ws["read_file"], path="locked.txt").content == "read_file failed: Permission denied; nothing was read"


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ({"name": "a.txt"}, "path must be a string such as notes/result.md"),
        (["a.txt", "b.txt"], "give one path, not a list of 2"),
        ([{"name": "a.txt"}], "path must be a string such as notes/result.md"),
        ("a\nb.txt", "the path holds a control character ('\\n')"),
        ("a\tb.txt", "the path holds a control character ('\\t')"),
        ("a\x1b[31mb.txt", "the path holds a control character ('\\x1b')"),
    ],
)
def test_paths_that_are_not_one_plain_string_are_refused(tmp_path, ws, path, says):
    for name in ("write_file", "read_file", "list_files"):
        reply = call(ws[name], path=path, content="x")
        assert reply.status == "error" and says in reply.content, reply.content
    assert snapshot(tmp_path / "ws") == {}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_pipe_is_not_a_regular_file(tmp_path, ws):
    os.mkfifo(tmp_path / "ws/pipe")
    assert "- pipe (not a regular file)" in call(ws["list_files"]).content
    assert "- pipe (not a regular file)" in review_of(tmp_path / "ws")
    for reply in (call(ws["read_file"], path="pipe"), call(ws["write_file"], path="pipe", content="x")):
        assert reply.status == "error" and "pipe is not a regular file" in reply.content  # opening it would block


def review_of(root, tasks=None, **config) -> str:
    """What replan_review_context shows subtask 1 when ``root`` is the workspace folder."""
    tasks = tasks or {"1": {**new_task("1", "work", position=[0]), "status": "in_progress"}}
    session = ReplanSession("1", tasks, ["default"], AgentConfig(workspace_dir=str(root), **config))
    return {t.name: t for t in replan_toolkit(session)}[REVIEW_TOOL].invoke({})


def test_the_review_lists_links_without_following_them(tmp_path):
    root, _ = outside_links(tmp_path)
    (root / "gone.txt").symlink_to(root / "missing.txt")
    (root / "a.txt").write_text("hello")
    text = review_of(root)
    assert "- gone.txt (broken link)" in text and "- a.txt (5 bytes)" in text
    assert "- out_file (link leading outside the workspace)" in text and "(10 bytes)" not in text  # TOP SECRET


def test_a_long_file_listing_leaves_room_for_the_plan(tmp_path):
    for n in range(40):
        (tmp_path / f"{'a_rather_long_file_name_' * 3}{n:02d}.txt").write_text("x")
    tasks = {"1": {**new_task("1", "work", position=[0]), "status": "in_progress"}}
    tasks.update({f"p{n}": new_task(f"p{n}", f"later step {n}", position=[n + 1]) for n in range(10)})
    text = review_of(tmp_path, tasks, review_context_chars=2_000)
    assert len(text) <= 2_000 and all(f"p{n}: later step {n}" in text for n in range(10))
    assert re.search(r"\n\(… \d+ more not shown; call list_files\)$", text)


def test_the_review_looks_at_a_bounded_number_of_entries(tmp_path, monkeypatch):
    monkeypatch.setattr(toolkit_module, "MAX_REVIEW_WALKED", 50)
    for n in range(60):
        (tmp_path / f"f{n:02d}.txt").write_text("x")
    assert re.search(r"\n\(… \d+\+ more not shown; call list_files\)$", review_of(tmp_path))


def file_graph(root, **options):
    """A graph whose one subtask lists the workspace (into ``listings``), then writes ``mine.txt``."""
    listings = []

    def work(request):
        if not request.called("list_files"):
            return tool_call("list_files", {})
        if not request.called("write_file"):
            listings.append(request.last_result("list_files"))
            return tool_call("write_file", {"path": "mine.txt", "content": "x"})
        return "written"

    model = make_model(plan_of({"id": "1", "content": "write mine"}), work)
    return build_graph(model, tools=workspace_tools(root, **options)), listings


@pytest.mark.parametrize("threads", [("a", "b"), ("a.b", "a/b"), (None, None)], ids=["plain", "odd", "none"])
def test_each_thread_and_each_run_without_one_has_its_own_folder(tmp_path, threads):
    graph, listings = file_graph(tmp_path / "ws")
    for thread in threads:
        config = {"configurable": {"thread_id": thread}} if thread else {}
        final = graph.invoke({"messages": [("user", f"run {thread}")]}, config)
        assert final["tasks"]["1"]["status"] == "completed"
    assert listings == ["No files in the workspace.", "No files in the workspace."]  # the second saw nothing
    folders = sorted(p.name for p in (tmp_path / "ws").iterdir())
    assert len(folders) == 2 and all((tmp_path / "ws" / f / "mine.txt").is_file() for f in folders)
    if threads[0] is None:
        assert all(f.startswith("~run-") for f in folders)


def test_shared_tools_let_every_thread_see_one_folder(tmp_path):
    graph, listings = file_graph(tmp_path / "ws", shared=True)
    for thread in ("a", "b"):
        graph.invoke({"messages": [("user", "run")]}, {"configurable": {"thread_id": thread}})
    assert listings[0] == "No files in the workspace." and "- mine.txt" in listings[1]


@pytest.mark.parametrize("thread", ["no-run", "~no-run", "run-1", "~run-1"])
def test_no_thread_id_names_the_folder_of_calls_outside_a_run_or_of_a_run_without_one(tmp_path, thread):
    """A thread named like the folder of calls made outside any run (or of a run without a thread id) has a folder
    of its own: it reads nothing written there."""
    outside = {t.name: t for t in workspace_tools(tmp_path / "ws")}
    outside["write_file"].invoke({"path": "secret.txt", "content": "written outside any run"})
    graph, listings = file_graph(tmp_path / "ws")
    final = graph.invoke({"messages": [("user", "run")]}, {"configurable": {"thread_id": thread}})
    assert final["tasks"]["1"]["status"] == "completed"
    assert listings == ["No files in the workspace."]
    folders = sorted(p.name for p in (tmp_path / "ws").iterdir())
    assert len(folders) == 2 and "~no-run" in folders
