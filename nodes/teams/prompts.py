"""The team judges' and voters' prompts."""

from __future__ import annotations

TEAM_BEST_PROMPT = """\
You judge the results of several agents that each did the same subtask. Pick the one result \
that best does what the subtask asks: correct, complete, and following its instructions.
Answer by calling the Pick tool: the winner's candidate number and a one-sentence reason."""

TEAM_VOTE_PROMPT = """\
You score the results of other agents that each did the same subtask as you. Score each \
result from 0 (useless) to 10 (correct, complete, and following the subtask's instructions).
Answer by calling the Ballot tool: one score for each candidate number."""

TEAM_FUSION_PROMPT = """\
Several agents each did the same subtask. Write the one result that combines theirs: keep \
every correct item, number and name any of them found, drop what is wrong or repeated, and \
follow the subtask's instructions. Answer by calling the Fusion tool with the combined result only."""

TEAM_TEMPLATE = """\
Overall goal: {goal}

Subtask ({task_id}): {content}

{candidates}"""

TEAM_CANDIDATE = "Candidate {number} ({agent_type}):\n{result}"

TEAM_RETRY = """\
Your answer could not be read: {error}
Previous answer: {previous}
Answer again by calling the {tool} tool."""

TEAM_CANDIDATE_PARTIAL = "\n[Partial: its agent left this work for follow-up subtasks: {work}]"
