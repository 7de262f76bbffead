"""Human in the loop as one `Feature`: the ask node (one question per waiting subtask), the plan review
(``approve_plan``) and the commands node (slash commands), and their routing rules.

Each of these nodes pauses with ``interrupt()`` as its first step. Its wrappers offer ``ask_user`` to the
executor's model and screen the questions agents ask. The builder wires the plan review and
the commands node itself (where a run starts, what follows a command): those edges are the graph's
documented shape.
"""

from __future__ import annotations

from collections.abc import Mapping

from langchain_core.tools import BaseTool

from replangraph.config import AgentConfig, AgentProfile
from replangraph.features import Feature, FeatureNode
from replangraph.names import ASK, COMMANDS, PLAN_REVIEW
from replangraph.nodes.human.ask import AskUser
from replangraph.nodes.human.commands import CommandRunner
from replangraph.nodes.human.hooks import CommandHandler, OfferAskUser, ScreenQuestions, ask_user_tool, human_rules
from replangraph.nodes.human.plan_review import PlanReview


def human_feature(
    planning: Mapping[str, AgentProfile],
    config: AgentConfig,
    handlers: Mapping[str, CommandHandler],
    asker: BaseTool | None = None,
) -> Feature:
    """The nodes, rules and wrappers; ``planning``: the agent types an edited plan may name; ``handlers``: slash
    commands; ``asker``: the ask_user tool (one object for its schema and its calls)."""
    asker = asker or ask_user_tool()
    return Feature(
        "human",
        nodes={
            ASK: FeatureNode(AskUser(config)),  # parallel questions join at the tools node, like model turns
            PLAN_REVIEW: FeatureNode(PlanReview(planning, config), joins_tools=False, routed=False, after_plan=True),
            COMMANDS: FeatureNode(CommandRunner(handlers, config), joins_tools=False),
        },
        rules=human_rules(),
        model_wrappers=[OfferAskUser(config, asker)],  # ask_user is offered while the subtask may still ask
        tool_wrappers=[ScreenQuestions(config, asker)],  # questions the user need not see are answered at once
    )
