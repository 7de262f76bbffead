"""The final answer as the Markdown of the thread's last message: its lines shown as written."""

from __future__ import annotations

from replangraph.nodes.finalize.chat_markdown import chat_markdown


def test_prose_lines_become_paragraphs_and_lists_stay_lists():
    assert chat_markdown("Summary:\nfirst\nsecond") == "Summary:\n\nfirst\n\nsecond"
    assert chat_markdown("Results:\n- a\n- b\n1. c\nAfter") == "Results:\n\n- a\n- b\n1. c\n\nAfter"
    assert chat_markdown("## Done\n- a\n  Result: x\n- b") == "## Done\n- a  \n  Result: x\n- b"  # a hard break


def test_code_tables_and_blank_lines_are_left_as_they_are():
    fenced = "```python\nx = 1\ny = 2\n```"
    assert chat_markdown(f"Code:\n{fenced}\nEnd") == f"Code:\n\n{fenced}\n\nEnd"
    table = "| a | b |\n| - | - |\n| 1 | 2 |"
    assert chat_markdown(f"{table}\nNote") == f"{table}\n\nNote"  # a plain line would be read as a row
    assert chat_markdown("one\n\ntwo\n") == "one\n\ntwo\n"


def test_code_in_a_fence_indented_inside_a_list_item_is_left_as_written():
    text = "Steps:\n1. Install it:\n   ```bash\n   pip install x\n   pip install y\n   ```\n2. Run it."
    shown = chat_markdown(text)
    assert "   pip install x\n   pip install y\n" in shown  # no hard breaks or blank lines inside the code
