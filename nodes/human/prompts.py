"""Human in the loop's texts: the ask_user tool, and what agents are told about their questions."""

from __future__ import annotations

ASK_USER_DESCRIPTION = (
    "Ask the user one question and wait for the answer. Only when you cannot go on without them "
    "(a choice only they can make, information no tool has); one question per call."
)

QUESTION_DESCRIPTION = "The one question to ask, short and answerable."

NO_ANSWER = "The user gave no answer. Go on with your best judgement and say in your result what you assumed."

NO_QUESTIONS = (
    "No user can be asked in this run (max_clarifications=0). "
    "Go on with what you have and say in your result what you assumed."
)

ASKED_BEFORE = "You asked this already and the user answered: {answer}\nDo not ask again; go on with that answer."

ANSWERED_IN_RUN = (
    "The user answered this already in this run (asked by subtask {task_id}: {task}): {answer}\n"
    "Do not ask again; go on with that answer."
)

ANSWERS_GIVEN = "The user already answered these questions in this run; go on with the answers, do not ask again:"

MORE_ANSWERS = "({count} earlier answers are not shown; ask_user returns the answer to any of them without asking.)"

ANSWER_TAKEN = 'Your answer to "{question}" went to subtask {task_id} ({task}); the run goes on.'
"""The AI message after an answer typed into the chat: a chat client draws the next question's form under it."""

PLAN_TAKEN = {
    "approved": "Plan approved; the run goes on.",
    "edited": "Plan edited ({subtasks}); the run goes on.",
}
"""The AI message after a plan decision typed into the chat, by decision."""

NO_MORE_QUESTIONS = (
    "No more questions: this subtask has asked {asked} (max_clarifications={limit}). "
    "Go on with what you have and say in your result what you assumed."
)

DECLINED = (
    "The user declined to answer{reason}. Go on with your best judgement and say in your result what you assumed."
)

NO_USER = (
    "No user can be asked in this run: the graph has no checkpointer to pause with. "
    "Go on with what you have and say in your result what you assumed."
)
