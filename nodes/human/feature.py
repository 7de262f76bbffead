"""Human in the loop as one `Feature`: the ask node (one question per waiting subtask), the plan review
(``approve_plan``) and the commands node (slash commands), and their routing rules.

Each of these nodes pauses with ``interrupt()`` as its first step. Its wrappers offer ``ask_user`` to the
executor's model and screen the questions agents ask (one answered anywhere in the run is answered from the
record); its opening note tells a starting subtask the run's answers so far; its entry sends a slash command
sent as input to the commands node instead of the planner.
"""

from __future__ import annotations

from collections.abc import Mapping

from langgraph.graph import END

from replangraph.config import AgentConfig, AgentProfile
from replangraph.features import Build, Feature, FeatureNode, Stop
from replangraph.names import TOOLS
from replangraph.nodes.human.ask import AskUser
from replangraph.nodes.human.commands import CommandRunner
from replangraph.nodes.human.hooks import (
    CommandHandler,
    OfferAskUser,
    ScreenQuestions,
    ask_user_tool,
    human_rules,
    make_command_router,
    make_entry_router,
    opening_answers,
    registered_commands,
)
from replangraph.nodes.human.names import ASK, COMMANDS, PLAN_REVIEW
from replangraph.nodes.human.plan_review import PlanReview
from replangraph.nodes.human.questions import answers_note
from replangraph.nodes.human.state import AskingTask, HumanState


def feature(build: Build) -> Feature:
    """Human in the loop; ``build.options["commands"]``: the slash commands `replangraph.build_graph` was given."""
    return human_feature(build.planning, build.config, build.options.get("commands"))


def human_feature(
    planning: Mapping[str, AgentProfile],
    config: AgentConfig,
    commands: Mapping[str, CommandHandler] | None = None,
) -> Feature:
    """The nodes, rules and wrappers; ``planning``: the agent types an edited plan may name; ``commands``: slash
    commands by name (ValueError for a bad name or handler)."""
    handlers = registered_commands(commands)
    asker = ask_user_tool()  # one tool object: its schema for the model, and the same object screens its calls
    return Feature(
        "human",
        nodes={
            ASK: FeatureNode(
                AskUser(config), pauses=True
            ),  # parallel questions join at the tools node, like model turns
            # The plan review leads where planning does, or to the commands node (a command as the answer).
            # A typed answer it cannot use is answered with a message, then it pauses again (it leads to itself).
            PLAN_REVIEW: FeatureNode(
                PlanReview(planning, config),
                pauses=True,
                joins_tools=False,
                routed=False,
                after_plan=True,
                goes_like_planning=True,
                leads_to=(COMMANDS, PLAN_REVIEW),
            ),
            # After a command: the run pauses again, resumes (/resume), or ends (END).
            COMMANDS: FeatureNode(
                CommandRunner(handlers, config),
                joins_tools=False,
                router=make_command_router,
                leads_to=(PLAN_REVIEW, TOOLS, END),
            ),
        },
        rules=human_rules(),
        entry=make_entry_router,  # a slash command goes to the commands node, an answer to the node that waits
        entry_nodes=(COMMANDS, ASK, PLAN_REVIEW),
        agent_tools=[asker],
        model_wrappers=[OfferAskUser(config, asker)],  # ask_user is offered while the subtask may still ask
        tool_wrappers=[ScreenQuestions(config, asker)],  # questions the user need not see are answered at once
        opening_note=opening_answers,  # a starting subtask is told the answers the user gave in this run
        state=HumanState,
        output=HumanState,
        task_fields=AskingTask,
        on_new_plan=fresh_plan,  # a new plan waits for review (approve_plan) and is not cancelled
        stop=cancelled_run,
        summary_note=answers_note,  # a summary that folds the questions away keeps their answers
    )


def fresh_plan(settings: AgentConfig) -> dict[str, object]:
    """What a new plan starts with: its review waits (``approve_plan``) or is not asked; not cancelled; no
    answers yet."""
    return {"plan_review": "waiting" if settings.approve_plan else "not_asked", "cancelled": False, "answers": 0}


CANCELLED = "the user cancelled the run"


def cancelled_run(state: Mapping[str, object], settings: AgentConfig) -> Stop | None:
    """The user cancelled the run: the report says so; running subtasks are skipped, their calls never run."""
    return Stop(CANCELLED, skip_running=True) if state.get("cancelled") else None
