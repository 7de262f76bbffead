"""The executing agent's rules (nodes/execution/prompts.py): the toolkit's tool names as replangraph.names spells
them, and the text scripted models and the deterministic benchmarks match on, unchanged."""

from __future__ import annotations

from replangraph.names import REPLAN_MARKER, REVIEW_TOOL, SPLIT_TOOL
from replangraph.nodes.execution.prompts import execution_rules, system_prompt
from replangraph.tools import replan_toolkit


def test_the_rules_name_the_toolkit_s_tools_as_the_toolkit_does():
    rules = execution_rules(7)
    offered = {tool.name for tool in replan_toolkit(None)}
    assert {REVIEW_TOOL, SPLIT_TOOL} <= offered
    assert f"`{REVIEW_TOOL}`" in rules and f"`{SPLIT_TOOL}`" in rules and REPLAN_MARKER in rules


def test_the_rules_text_is_unchanged():
    assert execution_rules(50) == (
        "Rules:\n"
        "- Your final reply (no tool calls) is the subtask's result: put the data in it; later subtasks see only "
        "that.\n"
        "- More than 50 items: process one batch of at most 50 and call `replan_review_context` (independent calls "
        "in one reply), then `replan_split_and_handoff`: your data as `summary`, the rest as tasks of at most 50 "
        "items. It ends your subtask.\n"
        "- If it cannot be done as planned, reply with [REPLAN] and the reason."
    )
    assert system_prompt("Be brief.", 50) == "Be brief.\n\n" + execution_rules(50)
