"""Compression is lossless: properties over random histories, and the units behind them."""

from __future__ import annotations

import json
import re

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from steps import returned

from replangraph import AgentConfig
from replangraph.context.compression import (
    SUMMARY_HEADER,
    compression_steps,
    cut_points,
    is_summary,
    split_window,
    transcript,
)
from replangraph.context.excerpts import NOTE_RE, recut
from replangraph.context.fitting import cut_args, cut_call_args, excerpt, kept_id, mark_kept, mentions_read_output
from replangraph.context.summarizing import split_text, summary_steps
from replangraph.context.window_monitor import ContextMonitor
from replangraph.context.window_outputs import drop_old_observations, is_dropped
from replangraph.llm.calls import run_steps
from replangraph.llm.reading import all_tool_calls, message_text
from replangraph.nodes.compression.compressor import Compressor
from replangraph.testing import ScriptedChatModel, tool_call


def compressed(window, *, summarize, **options):
    """`compression_steps` driven by `run_steps`, ``summarize(previous, messages)`` a plain function."""
    return run_steps(compression_steps(window, summarize=lambda p, m: returned(summarize(p, m)), **options))


def tool_pairs_ok(messages) -> bool:
    """The provider rule: each tool result answers an open call; calls are answered before anything else."""
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in open_calls:
                return False
            open_calls.discard(message.tool_call_id)
            continue
        if open_calls:
            return False
        if isinstance(message, AIMessage):
            open_calls = {c["id"] for c in all_tool_calls(message)}
    return True


def pointers(text: str) -> list[str]:
    """Output ids named by the notes in ``text``."""
    return [m.group(1) for m in NOTE_RE.finditer(text)]


HEAD = [SystemMessage("You are an agent."), HumanMessage("Your subtask (a): read everything")]
FACT = re.compile(r"F\d+")


def tokens(window):
    return count_tokens_approximately(window)


def facts(text: str) -> set[str]:
    return set(FACT.findall(text))


def window_text(window) -> str:
    return "\n".join(transcript([m]) for m in window)


class ListingSummarizer:
    """A faithful summarizer: lists every fact it was shown, and records what it was shown."""

    def __init__(self):
        self.seen: list[str] = []

    def __call__(self, previous, messages):
        shown = (previous or "") + "\n" + transcript(messages)
        self.seen.append(shown)
        return "facts: " + " ".join(sorted(facts(shown), key=lambda f: int(f[1:])))


# --------------------------------------------------------------------------- random histories


@st.composite
def histories(draw):
    """Head, then turns of text replies or (parallel) tool calls with their results; every message
    carries fact tokens F<n> amid filler."""
    counter = iter(range(10_000))
    body = []
    for n in range(draw(st.integers(1, 14))):
        if draw(st.booleans()):
            body.append(AIMessage(f"noted F{next(counter)} " + "thinking " * draw(st.integers(1, 80)), id=f"ai{n}"))
        else:
            calls = [tool_call("read", {"n": n + k}, call_id=f"c{n}_{k}") for k in range(draw(st.integers(1, 3)))]
            body.append(AIMessage("", tool_calls=calls, id=f"ai{n}"))
            for c in calls:
                parts = [f"F{next(counter)} " + "data " * draw(st.integers(0, 400)) for _ in range(3)]
                body.append(ToolMessage(" ".join(parts), tool_call_id=c["id"], name="read"))
    return [*HEAD, *body]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(window=histories(), keep_last=st.integers(1, 12), budget=st.integers(900, 6_000))
def test_compression_keeps_every_fact_within_reach(window, keep_last, budget):
    assert tool_pairs_ok(window)
    summarizer = ListingSummarizer()

    def fits(w):
        return tokens(w) <= budget

    result = compressed(window, keep_last=keep_last, fits=fits, summarize=summarizer, plan="[ ] a: x", task_id="a")
    # every fact is in the kept window, in the summarizer's input, or in the saved texts read_output serves
    reachable = window_text(result.window) + "\n".join(summarizer.seen) + "\n".join(result.saved.values())
    assert facts(window_text(window)) <= facts(reachable)
    # what the summarizer was shown was never cut
    for shown in summarizer.seen:
        assert "not shown here" not in shown or pointers(shown)
    # every note points at a saved text
    for ident in pointers(window_text(result.window)):
        assert ident.removeprefix("a/") in result.saved
    # the provider rule holds, and the window fits
    assert tool_pairs_ok(result.window)
    assert [type(m) for m in result.window[:2]] == [SystemMessage, HumanMessage]
    assert sum(is_summary(m) for m in result.window) <= 1
    assert result.fits and fits(result.window)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=histories(),
    second=histories(),
    keep_last=st.integers(1, 12),
    budget=st.integers(900, 4_000),
    task_id=st.sampled_from(["a", "3_dyn_0", 'step "1"', "x/y"]),
)
def test_repeated_compressions_keep_every_fact_within_reach(first, second, keep_last, budget, task_id):
    summarizer = ListingSummarizer()
    saved: dict[str, str] = {}

    def compress(window):
        result = compressed(
            window,
            keep_last=keep_last,
            fits=lambda w: tokens(w) <= budget,
            summarize=summarizer,
            task_id=task_id,
            taken=lambda key: key in saved,
        )
        assert not set(result.saved) & set(saved)  # kept text is written once
        saved.update(result.saved)
        return result

    later = [m.model_copy(update={"content": str(m.content).replace("F", "G")}) for m in second[2:]]
    once = compress(first)
    twice = compress([*once.window, *later])
    reachable = window_text(twice.window) + "\n".join(summarizer.seen) + "\n".join(saved.values())
    original = window_text([*first, *later])
    assert facts(original) <= facts(reachable)
    assert set(re.findall(r"G\d+", original)) <= set(re.findall(r"G\d+", reachable))
    for ident in pointers(window_text(twice.window)):
        assert ident.removeprefix(f"{task_id}/") in saved
    assert tool_pairs_ok(twice.window) and twice.fits


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(window=histories(), keep_last=st.integers(1, 12))
def test_keep_last_is_a_ceiling_and_the_tail_is_folded_before_any_message_is_cut(window, keep_last):
    summarizer = ListingSummarizer()
    _, _, body = split_window(window)
    last_group = cut_points(body, 1)[0]
    minimal = [*HEAD, HumanMessage(SUMMARY_HEADER + " " + "x" * 400), *body[last_group:]]
    budget = tokens(minimal) + 600  # room for a summary and the last group, not for much more
    assume(tokens(window) > budget)

    result = compressed(
        window, keep_last=keep_last, fits=lambda w: tokens(w) <= budget, summarize=summarizer, task_id="a"
    )
    kept = [m for m in result.window[2:] if not is_summary(m)]
    assert len(kept) <= max(keep_last, len(body) - last_group)
    cut = [k for k in result.saved if not k.startswith("history-")]
    if cut:  # a message was cut only because the last group alone was too big
        assert result.folded == last_group or not any(isinstance(m, AIMessage) for m in body[:last_group])


def test_cut_points_keep_at_most_keep_last_but_never_split_the_last_group():
    calls = [tool_call("read", {"n": k}, call_id=f"c{k}") for k in range(3)]
    group = [AIMessage("", tool_calls=calls), *(ToolMessage("x", tool_call_id=c["id"]) for c in calls)]
    body = [AIMessage("a"), *group, AIMessage("", tool_calls=calls[:1]), ToolMessage("y", tool_call_id="c0")]
    assert cut_points(body, 2) == [5]  # the last group, nothing earlier
    assert cut_points(body, 6) == [1, 5]  # never inside the parallel group
    assert cut_points(body[:5], 2) == [1]  # the last group is bigger than keep_last: it is kept whole


# --------------------------------------------------------------------------- units


def long_window(n=6, size=400):
    body = []
    for i in range(n):
        body.append(AIMessage("", tool_calls=[tool_call("read", {"n": i}, call_id=f"c{i}")]))
        body.append(ToolMessage(f"page {i} F{i} " + "x" * size, tool_call_id=f"c{i}", name="read"))
    return [*HEAD, *body]


def test_second_compression_folds_the_first_summary_and_lists_every_history():
    seen = []

    def summarize(previous, messages):
        seen.append(previous)
        return f"S{len(seen)}"

    first = compressed(long_window(), keep_last=2, fits=lambda w: True, summarize=summarize, task_id="a")
    assert first.saved["history-1"].startswith("ASSISTANT: tool calls: read({'n': 0})")
    grown = [*first.window, *long_window(3)[2:]]
    second = compressed(grown, keep_last=2, fits=lambda w: True, summarize=summarize, plan="p", task_id="a")
    assert seen == [None, "S1"]  # the earlier summary text is handed to the summarizer
    text = second.window[2].content
    assert "S2" in text and "S1" not in text
    assert 'read_output(output_id="a/history-1")' in text and 'read_output(output_id="a/history-2")' in text
    assert second.folded == len(grown) - 2 - 1 - 2  # everything between the old summary and the kept tail


def test_summary_reinjects_the_plan_and_the_instructions():
    result = compressed(
        long_window(),
        keep_last=2,
        fits=lambda w: True,
        summarize=lambda p, m: "s",
        plan="[X] 1: gather (Result: 5 items)\n[>] a: read everything",
        instructions="(a) read everything",
    )
    text = result.window[2].content
    assert text.startswith(SUMMARY_HEADER)
    assert "Current plan:\n[X] 1: gather (Result: 5 items)" in text
    assert "Your subtask, unchanged:\n(a) read everything" in text


def test_a_message_too_big_on_its_own_is_cut_and_its_full_text_saved():
    big = "F7 " + "y" * 20_000 + " F8"
    window = [*HEAD, AIMessage("", tool_calls=[tool_call("read", {}, call_id="c")]), ToolMessage(big, tool_call_id="c")]
    calls = []
    result = compressed(
        window,
        keep_last=10,
        fits=lambda w: tokens(w) < 1_500,
        summarize=lambda p, m: calls.append(1) or "s",
        task_id="a",
    )
    assert result.folded == 0 and calls == []  # nothing older to fold
    assert tokens(result.window) < 1_500 and result.saved == {"c": big}
    assert pointers(result.window[-1].content) == ["a/c"] and kept_id(result.window[-1]) == "a/c"


def test_an_excerpt_is_cut_further_without_saving_it_again():
    original = "A" * 10_000
    shown = excerpt(original, 2_000, "t/c1")
    assert recut(shown, 800, "t/other")[1]  # not known to be kept: it must be saved
    smaller, must_save = recut(shown, 800, "t/other", kept="t/c1")
    assert not must_save and len(smaller) <= 800
    [note] = NOTE_RE.finditer(smaller)
    assert note.group(1) == "t/c1" and int(note.group(3)) == 10_000  # the note still spans to the end
    assert smaller.startswith("A" * int(note.group(2)))  # the head kept is the original's head


def test_a_summary_too_big_is_cut_keeping_its_instructions():
    def summarize(previous, messages):
        return "facts: " + " ".join(f"F{n}" for n in range(3_000))

    result = compressed(
        long_window(20, 3_000),
        keep_last=2,
        fits=lambda w: tokens(w) <= 2_500,
        summarize=summarize,
        instructions="(a) read everything",
        task_id="a",
    )
    summary = result.window[2]
    assert is_summary(summary) and "Your subtask, unchanged:\n(a) read everything" in summary.content
    assert result.saved["summary-1"].startswith("facts: F0 F1")
    assert 'output "a/summary-1"' in summary.content and result.fits


def test_usage_metadata_is_preferred_and_stripped_after_compression():
    monitor = ContextMonitor(AgentConfig())
    reply = AIMessage("hi", usage_metadata={"input_tokens": 50_000, "output_tokens": 10, "total_tokens": 50_010})
    assert monitor.tokens([*HEAD, reply]) == 50_010
    assert monitor.tokens([*HEAD, reply, HumanMessage("x" * 400)]) > 50_010
    result = compressed([*HEAD, reply], keep_last=5, fits=lambda w: True, summarize=lambda p, m: "s")
    assert result.window[-1].usage_metadata is None
    assert monitor.tokens(result.window) < 100


def test_effective_window_from_the_model_profile_and_tool_schemas_count():
    model = ScriptedChatModel(respond=lambda r: "x", profile={"max_input_tokens": 32_000})
    monitor = ContextMonitor(AgentConfig(reserved_output=2_000), model)
    assert monitor.context_window == 32_000 and monitor.effective_window == 30_000
    assert ContextMonitor(AgentConfig()).context_window == 200_000
    assert ContextMonitor(AgentConfig()).for_model(model).context_window == 32_000
    assert ContextMonitor(AgentConfig(context_window=9_000)).for_model(model).context_window == 9_000

    def search(query: str, limit: int = 10) -> str:
        """Search the catalogue for products matching the query, newest first."""
        return ""

    from langchain_core.tools import tool

    assert monitor.tokens(HEAD, [tool(search)]) > monitor.tokens(HEAD)


# --------------------------------------------------------------------------- summarizing in chunks


def test_map_reduce_shows_every_character_and_no_request_exceeds_the_budget():
    entries = [f"TOOL read: F{n} " + "z" * 900 for n in range(40)] + ["TOOL big: F99 " + "w" * 9_000 + " F100"]
    shown, sizes = [], []

    def fold(previous, text):
        shown.append(text)
        sizes.append(len(text) + len(previous or ""))
        return "facts: " + " ".join(sorted(facts((previous or "") + text)))

    def merge(texts):
        joined = "\n".join(texts)
        sizes.append(len(joined))
        return "facts: " + " ".join(sorted(facts(joined)))

    summary, calls = run_steps(
        summary_steps(
            "facts: F500",
            entries,
            lambda prior, text: returned(fold(prior, text)),
            lambda texts: returned(merge(texts)),
            fits_fold=lambda p, t: len(t) + len(p or "") <= 4_000,
            fits_merge=lambda texts: sum(map(len, texts)) <= 4_000,
        )
    )
    assert "".join(shown).replace("\n", "") == "".join(entries).replace("\n", "")  # nothing truncated
    assert max(sizes) <= 4_000 and calls == len(sizes) > 2
    assert facts(summary) == {f"F{n}" for n in range(40)} | {"F99", "F100", "F500"}


def test_summarizer_requests_fit_the_summary_model_window():
    requests = []

    def respond(request):
        requests.append(count_tokens_approximately(request.messages))
        return "facts: " + " ".join(sorted(facts(request.prompt)))

    small = ScriptedChatModel(respond=respond, profile={"max_input_tokens": 3_000})
    config = AgentConfig(reserved_output=500)
    compressor = Compressor(small, {}, {"default": []}, config, ContextMonitor(config))
    summary = compressor.summarize("facts: F900", long_window(30, 2_000)[2:])
    budget = int((3_000 - 500) * 0.9)
    assert len(requests) > 2 and max(requests) <= budget
    assert facts(summary) == {f"F{n}" for n in range(30)} | {"F900"}


def test_failing_summary_model_keeps_the_earlier_summary_and_says_where_the_messages_are():
    def respond(request):
        raise RuntimeError("summary model down")

    config = AgentConfig(keep_last_messages=2)
    compressor = Compressor(ScriptedChatModel(respond=respond), {}, {"default": []}, config, ContextMonitor(config))
    text = compressor.summarize("found A and B", long_window()[2:])
    assert text.startswith("found A and B") and "summary model down" in text and "read them in full" in text


def test_split_text_gives_the_text_back():
    text = "\n".join(f"line {n} " + "q" * (n % 50) for n in range(500))
    pieces = split_text(text, 700)
    assert "".join(pieces) == text and max(map(len, pieces)) <= 700


# --------------------------------------------------------------------------- dropped outputs


def test_old_observations_are_dropped_with_a_pointer_and_kept_once():
    window = long_window(5)
    full = "F1 " + "k" * 5_000
    window[3] = mark_kept(window[3], excerpt(full, 1_000, "a/c0"), "a/c0")  # c0 was cut and kept before
    window[5] = window[5].model_copy(
        update={
            "content": 'quotes [… output "b/x": characters 1-2 of 3 are not '
            'shown here; read them with read_output(output_id="b/x", offset=1) …] F9'
        }
    )
    trimmed, saved = drop_old_observations(window, keep=2, task_id="a", taken=lambda key: key == "c0")
    assert tool_pairs_ok(trimmed)
    assert sorted(saved) == ["c1", "c2"]  # c0's original is kept already; c1 only quotes a note: saved
    assert saved["c1"].endswith("F9") and saved["c2"].startswith("page 2")
    dropped = [m for m in trimmed if isinstance(m, ToolMessage) and is_dropped(m)]
    assert [kept_id(m) for m in dropped] == ["a/c0", "a/c1", "a/c2"]
    assert all(f'read_output(output_id="{kept_id(m)}")' in message_text(m) for m in dropped)
    again, saved_again = drop_old_observations(trimmed, keep=2, task_id="a")
    assert again == trimmed and saved_again == {}


def test_outputs_with_the_same_call_id_get_their_own_keys():
    window = [*HEAD]
    for n in range(3):  # a model that writes calls as text repeats the same derived call id
        window.append(AIMessage("", tool_calls=[tool_call("next_page", {}, call_id="call_text_1")]))
        window.append(ToolMessage(f"ITEM-{n} " + "z" * 50, tool_call_id="call_text_1", name="next_page"))
    trimmed, saved = drop_old_observations(window, keep=0, task_id="a", taken=lambda key: key == "call_text_1")
    assert sorted(saved.values()) == sorted(m.content for m in window if isinstance(m, ToolMessage))
    assert "call_text_1" not in saved and len(set(kept_id(m) for m in trimmed[2:] if kept_id(m))) == 3


def test_odd_task_ids_round_trip_through_notes():
    for task_id in ("step [1]", 'step "1"', "3_dyn_0", "1_r2", "a/b"):
        ident = f"{task_id}/call-x_1"
        shown = excerpt("Q" * 5_000, 1_000, ident)
        assert pointers(shown) == [ident]
        smaller, must_save = recut(shown, 500, "other", kept=ident)
        assert not must_save and pointers(smaller) == [ident]


def test_a_reasoning_summary_models_think_block_is_no_summary():
    def respond(request):
        return "<think>F999 too? it is not in the text</think>\nfacts: " + " ".join(sorted(facts(request.prompt)))

    config = AgentConfig()
    compressor = Compressor(ScriptedChatModel(respond=respond), {}, {"default": []}, config, ContextMonitor(config))
    summary = compressor.summarize(None, long_window()[2:])
    assert "F999" not in summary and "think" not in summary and facts(summary)


# --------------------------------------------------------------------------- huge tool-call arguments


def test_cut_args_keeps_small_values_and_points_each_cut_at_its_place_in_the_whole():
    args = {"summary": "short", "tasks": [f"task {i}" for i in range(5_000)], "rows": "x" * 40_000}
    shown, whole = cut_args(args, 2_000, "1/c-args")
    assert whole == json.dumps(args, ensure_ascii=False)
    assert shown["summary"] == "short" and len(json.dumps(shown)) < 2_600
    for key in ("tasks", "rows"):
        match = NOTE_RE.search(shown[key])
        start, end = int(match.group(2)), int(match.group(3))
        head, tail = shown[key][: match.start() - 1], shown[key][match.end() + 1 :]
        assert whole[start - len(head) : start] == head and whole[end : end + len(tail)] == tail
    assert cut_args({"a": 1}, 2_000, "x") == ({"a": 1}, '{"a": 1}')


def test_cut_call_args_cuts_only_answered_calls_wherever_the_message_holds_them():
    big = {"content": "y" * 30_000}
    raw = [{"id": i, "type": "function", "function": {"name": "w", "arguments": json.dumps(big)}} for i in "ab"]
    message = AIMessage(
        content=[{"type": "text", "text": "writing"}, {"type": "tool_use", "id": "a", "name": "w", "input": big}],
        tool_calls=[tool_call("w", big, call_id="a"), tool_call("ask_user", {"question": "q" * 30_000}, "b")],
        invalid_tool_calls=[{"type": "invalid_tool_call", "id": "c", "name": "w", "args": "{" * 30_000, "error": "e"}],
        additional_kwargs={"tool_calls": raw},
        usage_metadata={"input_tokens": 10, "output_tokens": 20_000, "total_tokens": 20_010},
    )
    cut, kept = cut_call_args(message, {"a", "c"}, 1_000, "7", taken=lambda key: key == "a-args")
    assert set(kept) == {"a-args~2", "c-args"} and kept["c-args"] == "{" * 30_000
    assert 'read_output(output_id="7/a-args~2"' in cut.tool_calls[0]["args"]["content"]
    assert cut.tool_calls[1] == message.tool_calls[1]  # a question waiting for its answer stays whole
    assert len(cut.invalid_tool_calls[0]["args"]) < 1_100
    assert cut.content[1]["input"] == cut.tool_calls[0]["args"] and cut.content[0]["text"] == "writing"
    assert json.loads(cut.additional_kwargs["tool_calls"][0]["function"]["arguments"]) == cut.tool_calls[0]["args"]
    assert cut.additional_kwargs["tool_calls"][1] == raw[1] and cut.usage_metadata is None
    assert mentions_read_output([cut]) and not mentions_read_output([message])
    assert cut_call_args(message, set(), 1_000, "7") == (message, {})
