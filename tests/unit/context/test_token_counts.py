"""The offline token count: LangChain's ``count_tokens_approximately``, with each tool's schema measured once."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import StructuredTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from replangraph.context.window_monitor import approximate_tokens, schema_chars

MESSAGES = [
    SystemMessage("You work on one subtask."),
    HumanMessage("Your subtask (1): read item 7"),
    AIMessage("", tool_calls=[{"name": "read_item", "args": {"index": 7}, "id": "call_1", "type": "tool_call"}]),
    ToolMessage("Item 7: in stock.", tool_call_id="call_1", name="read_item"),
]


@tool
def read_item(index: int) -> str:
    """Read one item's record by its index."""
    return f"item {index}"


class Query(BaseModel):
    text: str = Field(description="what to look for")
    limit: int = 10


def search(text: str, limit: int = 10) -> str:
    return text


def test_the_count_is_langchains_for_tools_of_every_kind():
    by_dict_schema = StructuredTool.from_function(
        search, name="by_dict", description="Search.", args_schema=Query.model_json_schema()
    )
    by_model = StructuredTool.from_function(search, name="by_model", description="Search.", args_schema=Query)
    openai_dict = convert_to_openai_tool(read_item)
    for tools in ([], [read_item], [read_item, by_model, by_dict_schema], [openai_dict, read_item]):
        for messages in ([], MESSAGES, MESSAGES[:2]):
            assert approximate_tokens(messages, tools) == count_tokens_approximately(messages, tools=tools or None)


def test_a_tool_renamed_or_redescribed_is_measured_again():
    renamed = StructuredTool.from_function(search, name="short", description="Search.", args_schema=Query)
    before = schema_chars(renamed)
    renamed.description = "Search the catalogue for items whose records mention the text, newest first."
    assert schema_chars(renamed) > before
    assert approximate_tokens(MESSAGES, [renamed]) == count_tokens_approximately(MESSAGES, tools=[renamed])
    renamed.name = "a_much_longer_name_for_the_same_search"
    assert approximate_tokens(MESSAGES, [renamed]) == count_tokens_approximately(MESSAGES, tools=[renamed])


def test_anything_else_is_left_to_langchain_which_refuses_it_alike():
    assert schema_chars(search) is None
    with pytest.raises(AttributeError) as ours:
        approximate_tokens(MESSAGES, [read_item, search])
    with pytest.raises(AttributeError) as langchains:
        count_tokens_approximately(MESSAGES, tools=[read_item, search])
    assert str(ours.value) == str(langchains.value)
