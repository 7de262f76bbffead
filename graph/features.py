"""How a feature plugs into the graph: the one mechanism teams, the completion check, human in the loop and
the single-agent fallback use.

A feature folder under ``nodes/`` builds a `Feature`: the nodes it adds, the routing rules it owns, the
agent types it adds to planning, the models it brings, what it does after each replanning round, and the
wrappers it adds to the executor's model and tool calls (`replangraph.middleware`). The
builder (`replangraph.builder`) registers the features in order; nothing else in the engine imports a feature
folder (the builder also wires human in the loop's plan review and commands nodes, the graph's documented
shape).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from replangraph.config import AgentProfile
from replangraph.routing import Rule, TaskRule

AfterReplan = Callable[..., tuple[Any, list[str]]]
"""``(state, tasks, updates, records, unanswered, settings) -> (task to queue or None, notes for the round's
record)``: called by the replanner after each round with what the round writes, whether its model did not
answer, and the run's settings (see `Feature.after_replan`)."""


@dataclass(frozen=True)
class FeatureNode:
    """A node a feature adds. ``error_handler``: LangGraph's ``add_node(error_handler=...)``. ``joins_tools``:
    the node is followed by the tools node, where parallel branches join (like a model turn); otherwise
    the builder wires it (the human feature's nodes, whose edges are the graph's documented shape)."""

    node: Callable[..., Any]
    error_handler: Callable[..., Any] | None = None
    joins_tools: bool = True
    routed: bool = True
    """The router may send the run to it."""
    after_plan: bool = False
    """The run may go there right after planning (a team's start, the plan review)."""


@dataclass(frozen=True)
class Feature:
    """What one feature adds to a graph. Rules are placed by their ``stage`` (see `replangraph.routing.STAGES`);
    task rules run ahead of the executor's in the dispatch step."""

    name: str
    nodes: Mapping[str, FeatureNode] = field(default_factory=dict)
    rules: Sequence[Rule] = ()
    task_rules: Sequence[TaskRule] = ()
    planning_types: Mapping[str, AgentProfile] = field(default_factory=dict)
    """Agent types a plan may name besides the profiles (a team is one)."""
    models: Mapping[str, Any] = field(default_factory=dict)
    """The models it brings, by the name a warning about stacked retries uses."""
    after_replan: AfterReplan | None = None
    """What it adds after each replanning round (the single-agent fallback queues its task)."""
    model_wrappers: Sequence[Callable[..., Any]] = ()
    """``wrap_model_call`` hooks for the executor's model calls (human in the loop offers ask_user)."""
    tool_wrappers: Sequence[Callable[..., Any]] = ()
    """``wrap_tool_call`` hooks for the executor's tool calls (human in the loop screens questions). A wrapper
    that answers calls of a tool of its own lists it in an ``answered_tools()`` method, so the tools node
    knows the name (an unknown tool's error lists it); such a wrapper may return None for a call the
    feature answers in a node of its own (the ask node)."""


def nodes_where(features: Sequence[Feature], test: Callable[[FeatureNode], bool]) -> list[str]:
    """The names of the features' nodes that pass ``test``, in order."""
    return [name for feature in features for name, spec in feature.nodes.items() if test(spec)]


def planning_types(features: Sequence[Feature]) -> dict[str, AgentProfile]:
    """The agent types ``features`` add to planning, in order."""
    return {name: profile for feature in features for name, profile in feature.planning_types.items()}
