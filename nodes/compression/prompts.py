"""The summary model's prompts."""

from __future__ import annotations

SUMMARIZER_PROMPT = """\
You compress the working memory of an agent in the middle of a subtask. Write a summary \
that lets the agent continue without the original messages: every fact, number, name, \
item and result it found (verbatim where it matters), what it already tried, and what is \
left to do. Fold the earlier summary in; do not mention that you are summarizing."""

SUMMARY_REQUEST = """\
Earlier summary:
{previous}

Messages to fold in:
{messages}"""

MERGE_REQUEST = """\
These summaries cover consecutive parts of the same work, in order. Merge them into one \
summary that keeps every fact, number, name, item and result of every part.

{parts}"""
