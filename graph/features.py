"""How a feature plugs into the graph: the one mechanism teams, the completion check, human in the loop and
the single-agent fallback use.

A feature folder under ``nodes/`` builds a `Feature`: the nodes it adds, the routing rules it owns, the
agent types it adds to planning, the models it brings, what it does after each replanning round, and the
wrappers it adds to the executor's model and tool calls (`replangraph.nodes.execution.middleware`). The
builder (`replangraph.builder`) registers the features in order and wires what they add; nothing else in the
engine imports a feature folder.
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


Router = Callable[[Mapping[str, Any]], Any]
"""A conditional edge's function: the state -> where the run goes."""


@dataclass(frozen=True)
class FeatureNode:
    """A node a feature adds. ``error_handler``: LangGraph's ``add_node(error_handler=...)``. ``joins_tools``:
    the node is followed by the tools node, where parallel branches join (like a model turn); otherwise it
    is followed by a routing decision: ``router`` (given the graph's router, it returns this node's) or
    the graph's router itself, to where the run may go after planning (``after_plan``) or anywhere the
    router sends it, plus ``leads_to``."""

    node: Callable[..., Any]
    error_handler: Callable[..., Any] | None = None
    joins_tools: bool = True
    routed: bool = True
    """The router may send the run to it."""
    after_plan: bool = False
    """The run may go there right after planning (a team's start, the plan review)."""
    router: Callable[[Router], Router] | None = None
    """Its own routing after it runs, built on the graph's router (``joins_tools`` False only)."""
    goes_like_planning: bool = False
    """Without ``joins_tools``: it leads where planning may (a plan review), not wherever the router may."""
    leads_to: tuple[str, ...] = ()
    """Where else it may lead (``END``, the tools node, another node of its feature)."""


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
    agent_tools: Sequence[Any] = ()
    """Tools its wrappers offer every executing agent (ask_user): counted in each request's size, and no
    agent type may have a tool of the same name."""
    model_wrappers: Sequence[Callable[..., Any]] = ()
    """``wrap_model_call`` hooks for the executor's model calls (human in the loop offers ask_user)."""
    entry: Callable[[Any], Router] | None = None
    """Where a run may start instead of the planner: given the graph's settings, a function of the input
    state that names one of ``entry_nodes`` (or sends to them), or None for the planner (human in the loop: a
    slash command, or a message answering what the run waits for)."""
    entry_nodes: tuple[str, ...] = ()
    tool_wrappers: Sequence[Callable[..., Any]] = ()
    """``wrap_tool_call`` hooks for the executor's tool calls (human in the loop screens questions). A wrapper
    that answers calls of a tool of its own lists it in an ``answered_tools()`` method, so the tools node
    knows the name (an unknown tool's error lists it); such a wrapper may return None for a call the
    feature answers in a node of its own (the ask node)."""
    opening_note: Callable[[Mapping[str, Any], Any], str] | None = None
    """``(state, subtask) -> text``: what a starting subtask's opening message ends with, or "" (human in the
    loop: the user's answers so far in this run). Never cut to fit, so the feature keeps it short."""


def nodes_where(features: Sequence[Feature], test: Callable[[FeatureNode], bool]) -> list[str]:
    """The names of the features' nodes that pass ``test``, in order."""
    return [name for feature in features for name, spec in feature.nodes.items() if test(spec)]


def planning_types(features: Sequence[Feature]) -> dict[str, AgentProfile]:
    """The agent types ``features`` add to planning, in order."""
    return {name: profile for feature in features for name, profile in feature.planning_types.items()}
