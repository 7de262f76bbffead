"""Human in the loop as one `Feature`: the ask node (one question per waiting subtask), the plan review
(``approve_plan``) and the commands node (slash commands), and their routing rules.

Each of these nodes pauses with ``interrupt()`` as its first step. The builder wires the plan review and
the commands node itself (where a run starts, what follows a command): those edges are the graph's
documented shape.
"""

from __future__ import annotations

from collections.abc import Mapping

from replangraph.config import AgentConfig, AgentProfile
from replangraph.features import Feature, FeatureNode
from replangraph.names import ASK, COMMANDS, PLAN_REVIEW
from replangraph.nodes.human.ask import AskUser
from replangraph.nodes.human.commands import CommandRunner
from replangraph.nodes.human.plan_review import PlanReview
from replangraph.nodes.human.routing import human_rules
from replangraph.nodes.human.slash import CommandHandler


def human_feature(
    planning: Mapping[str, AgentProfile], config: AgentConfig, handlers: Mapping[str, CommandHandler]
) -> Feature:
    """The nodes and rules; ``planning``: the agent types an edited plan may name; ``handlers``: slash commands."""
    return Feature(
        "human",
        nodes={
            ASK: FeatureNode(AskUser(config)),  # parallel questions join at the tools node, like model turns
            PLAN_REVIEW: FeatureNode(PlanReview(planning, config), joins_tools=False, routed=False, after_plan=True),
            COMMANDS: FeatureNode(CommandRunner(handlers, config), joins_tools=False),
        },
        rules=human_rules(),
    )
