"""Run limits (`AgentConfig`) and agent types (`AgentProfile`)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as as_tool
from pydantic import BaseModel, ConfigDict, Field

import replangraph.nodes as nodes
from replangraph.queue.tasks import DEFAULT_AGENT

MAX_STEP_TIMEOUT_S = 30 * 24 * 3600.0
"""The longest ``step_timeout_s`` taken (30 days): far longer ones overflow the clocks that wait on it."""

DEFAULT_AGENT_PROMPT = (
    "You execute one subtask of a larger plan with your tools. Do all of it: never stop early or "
    "claim 'enough data' while items remain."
)


class EngineSettings(BaseModel):
    """The engine's limits; `AgentConfig` adds each feature's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Work limits
    max_step_iterations: int = Field(15, ge=1, description="Model turns one subtask may take.")
    max_tasks: int = Field(500, ge=1, description="Most tasks the queue may ever hold.")
    max_split_depth: int = Field(3, ge=0, description="How deep dynamic tasks may split again.")
    max_steps: int = Field(
        1_000, ge=1, description="Global budget of model calls by executor, verifier and replanner (retries count)."
    )
    max_replans: int = Field(2, ge=0, description="Replans allowed in one run.")
    max_concurrency: int = Field(
        8,
        ge=1,
        description="Subtasks, and tool calls, that may run at the same time. 8: a plan's independent tasks run at "
        "once (LangGraph would run them all), while a local server's few slots or a provider's rate limit are "
        "not flooded; 1 runs one subtask at a time.",
    )
    planner_retries: int = Field(2, ge=0, description="Retries of an invalid plan before the fallback.")
    replanner_retries: int = Field(2, ge=0, description="Retries of an invalid replan before giving up.")
    model_retries: int = Field(2, ge=0, description="Retries of a model call that failed transiently.")
    retry_backoff_s: float = Field(
        1.0, ge=0, allow_inf_nan=False, description="First wait before a retry; doubles each time."
    )
    max_retry_wait_s: float = Field(
        60.0, ge=0, allow_inf_nan=False, description="Longest wait before a retry, Retry-After included."
    )
    step_timeout_s: float | None = Field(
        600.0,
        gt=0,
        le=MAX_STEP_TIMEOUT_S,
        allow_inf_nan=False,
        description="Wall time one subtask may take, and one planner, replanner, check or final-answer call, in "
        "seconds (at most 30 days); None: no limit.",
    )
    max_output_tokens: int | None = Field(
        None,
        ge=1,
        description="Most tokens one model answer may take, sent with every call; None: the reserved output "
        "(reserved_output, at most a quarter of context_window).",
    )
    pause_when_model_down: bool = Field(
        False,
        description="When the model server stops answering (connection refused or reset, timeouts) through every "
        "retry, end the run with ModelServerDown, resumable from its checkpoint, instead of failing the work "
        "(the replanner and the final report would only see more failures). The CLI sets it.",
    )
    batch_size: int = Field(50, ge=1, description="Items an agent handles before it must hand off the rest.")

    # Context monitor and compressor
    context_window: int | None = Field(
        None, ge=1, description="Input tokens the model accepts; None: model profile, else 200,000."
    )
    reserved_output: int = Field(8_000, ge=0, description="Tokens kept free for the model's answer.")
    compress_threshold: float = Field(0.9, gt=0, le=1, description="Usage ratio that triggers compression.")
    keep_last_messages: int = Field(10, ge=1, description="Recent messages compression leaves intact.")
    max_observation_chars: int = Field(10_000, ge=100, description="Longest tool output kept in context.")
    max_observations: int = Field(100, ge=1, description="Tool outputs of one subtask kept in context.")

    # Replan toolkit
    review_context_chars: int = Field(4_000, ge=500, description="Size cap of replan_review_context.")
    result_preview_chars: int = Field(160, ge=20, description="Result preview length in reviews.")
    workspace_dir: str | None = Field(
        None, description="Folder whose files the review lists; None: that of workspace_tools when the tools name one."
    )


def feature_settings() -> list[type[BaseModel]]:
    """The ``Settings`` model of each registered feature that has a ``settings.py`` (`replangraph.nodes.FEATURES`),
    in order. Only that module is imported: a feature's other code may import this one."""
    folder = Path(nodes.__file__).parent
    found = [name for name in nodes.FEATURES if (folder / name / "settings.py").is_file()]
    return [importlib.import_module(f"{nodes.__name__}.{name}.settings").Settings for name in found]


class AgentConfig(*reversed(feature_settings()), EngineSettings):  # fields: the engine's, then each feature's
    """Every limit of a run, with its default: the engine's and those of each feature
    (`replangraph.nodes.FEATURES`). Immutable; use ``model_copy(update=...)``.

    It is also the graph's context schema: the fields set in a run's ``context``
    override the graph's own for that run (see `run_settings`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")


def recursion_limit(config: AgentConfig) -> int:
    """Supersteps a run may need, so that budgets, not LangGraph's limit, end a run.

    A model call takes at most an executor, a compressor and two tools steps; a
    task can fail without a model call (timeout) and cost a replanner step.
    """
    return 10 + 4 * config.max_steps + 2 * config.max_tasks + 2 * config.max_replans


FINALIZE_MARGIN = 4
"""The router finalizes once ``remaining_steps`` is at most this. The next router decision may
come three supersteps later (executor, tools, replanner after the tools node's error handler),
and LangGraph raises once a superstep runs at the limit itself, so finalize must start
before that (``tests/test_run_settings.py`` sweeps the limits)."""


ToolLike = BaseTool | Callable[..., Any]


@dataclass(frozen=True)
class AgentProfile:
    """One agent type: the tools and system prompt of the agents that run its subtasks.

    ``description`` tells the planner what this agent type is for; ``model``
    overrides the graph's model for this type's subtasks.
    """

    tools: Sequence[ToolLike] = ()
    prompt: str = DEFAULT_AGENT_PROMPT
    description: str = ""
    model: BaseChatModel | None = field(default=None, compare=False)


def to_tools(tools: Sequence[ToolLike]) -> list[BaseTool]:
    """LangChain tools from tools or plain functions (docstring becomes the description)."""
    return [t if isinstance(t, BaseTool) else as_tool(t) for t in tools]


def resolve_profiles(
    agents: Mapping[str, AgentProfile] | None, shared_tools: Sequence[ToolLike]
) -> dict[str, AgentProfile]:
    """Profiles with ``default`` always present and the shared tools added to each."""
    profiles = dict(agents or {})
    profiles.setdefault(DEFAULT_AGENT, AgentProfile(description="General-purpose agent."))
    shared = to_tools(shared_tools)
    resolved = {}
    for name, profile in profiles.items():
        if not isinstance(profile, AgentProfile):
            raise TypeError(f"agents[{name!r}] must be an AgentProfile, got {type(profile).__name__}")
        tools = shared + [t for t in to_tools(profile.tools) if t not in shared]
        names = [t.name for t in tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"agent type {name!r} has several tools named {', '.join(duplicates)}")
        resolved[name] = AgentProfile(
            tools=tuple(tools), prompt=profile.prompt, description=profile.description, model=profile.model
        )
    return resolved
