"""build_graph: wires planner, executor, tools, compressor, replanner and finalize into one graph."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from replangraph.config import AgentConfig, AgentProfile, ToolLike, recursion_limit, resolve_profiles
from replangraph.context.window_monitor import ContextMonitor, TokenCounter
from replangraph.features import (
    Build,
    Feature,
    Metering,
    feature_factories,
    merged_schema,
    nodes_where,
    ordered_features,
    planning_types,
)
from replangraph.hosting import with_node
from replangraph.langgraph_private import CONFIG_KEY_DURABILITY, RunnableCallable
from replangraph.llm.aio import in_pool
from replangraph.llm.bounds import stacked_retries
from replangraph.names import (
    COMPRESSOR,
    EXECUTOR,
    FINALIZE,
    PLANNER,
    READ_OUTPUT,
    REPLANNER,
    RUN_START,
    TOOLKIT_NAMES,
    TOOLS,
)
from replangraph.nodes.compression.compressor import Compressor
from replangraph.nodes.execution.executor import Executor
from replangraph.nodes.execution.middleware import split_middleware
from replangraph.nodes.execution.tools_node import ToolRunner
from replangraph.nodes.finalize.finalizer import Finalizer
from replangraph.nodes.planning.planner import Planner
from replangraph.nodes.planning.replanner import Replanner
from replangraph.plan_message import with_plan_message
from replangraph.policy import TextPolicy
from replangraph.routing import default_rules, make_router, start_router
from replangraph.run_start import RunStarter
from replangraph.safety_net import fail_running_tool_calls, fail_the_subtask
from replangraph.state import InputState, OutputState, ReplanState
from replangraph.tools.read_output import read_output_tool
from replangraph.tools.replan_toolkit.toolkit import replan_toolkit

HANDLER_TARGETS = {EXECUTOR: TOOLS, TOOLS: REPLANNER, COMPRESSOR: TOOLS}
"""Where each node's error handler sends the run after turning a crash into a failed subtask."""


def warn_stacked_retries(models: Mapping[str, Any], config: AgentConfig) -> None:
    """Warn when a model's client retries on its own and replangraph cannot turn that off for its calls (a
    client other than OpenAI's, `stacked_retries`): each of our tries would become several."""
    if not config.model_retries:
        return
    stacked = {role: n for role, m in models.items() if m is not None and (n := stacked_retries(m))}
    if stacked:
        names = ", ".join(f"{role} (max_retries={n})" for role, n in stacked.items())
        warnings.warn(
            f"{names} retries failed requests itself, and replangraph retries them too "
            f"(model_retries={config.model_retries}), so one failure costs up to "
            f"{(config.model_retries + 1) * (max(stacked.values()) + 1)} requests. Build the model with "
            "max_retries=0 to let replangraph retry (it honours Retry-After and counts tries against max_steps), "
            "or set AgentConfig(model_retries=0). (An OpenAI client's retries are turned off for replangraph's "
            "calls without this.)",
            UserWarning,
            stacklevel=3,
        )


def with_workspace(config: AgentConfig, profiles: Mapping[str, AgentProfile]) -> AgentConfig:
    """``config`` with ``workspace_dir`` set to the folder of the workspace tools when it is unset
    and the tools name exactly one (``metadata["workspace_root"]``, set by `workspace_tools`)."""
    roots = {
        root
        for profile in profiles.values()
        for tool in profile.tools
        if isinstance(root := (tool.metadata or {}).get("workspace_root"), str)
    }
    if config.workspace_dir is not None or len(roots) != 1:
        return config
    return config.model_copy(update={"workspace_dir": roots.pop()})


def both_paths(
    node: Any, name: str, new_plan: bool | None = None, metering: Metering | None = None, pauses: bool = False
) -> RunnableCallable:
    """``node`` as LangGraph runs it: its ``__call__`` under ``invoke``, its ``acall`` under ``ainvoke`` and
    ``astream`` (a node without one runs in replangraph's thread pool there, not in asyncio's default one of
    cores + 4 threads). With ``new_plan`` not None the update also writes the plan message (`with_plan_message`);
    with ``metering`` it also carries what the features' reply hooks wrote for its model replies. ``pauses``: the
    node may pause the run (`replangraph.hosting.pauses_run`)."""
    sync = node if new_plan is None else with_plan_message(node, new_plan)
    asynchronous = getattr(node, "acall", None)
    if metering is not None:
        sync = metering.wrap(sync)
        asynchronous = None if asynchronous is None else metering.awrap(asynchronous)

    async def arun(state: Any) -> Any:
        if asynchronous is None:
            return await in_pool(lambda: sync(state))
        update = await asynchronous(state)
        return update if new_plan is None else with_plan_message(lambda _: update, new_plan)(state)

    return with_node(RunnableCallable(sync, arun, name=name, trace=False), node, metering, pauses)


def _check_model(model: Any, role: str) -> None:
    if not isinstance(model, BaseChatModel):
        raise TypeError(f"{role} must be a LangChain chat model (BaseChatModel), got {type(model).__name__}")


def build_graph(
    model: BaseChatModel,
    tools: Sequence[ToolLike] = (),
    *,
    agents: Mapping[str, AgentProfile] | None = None,
    teams: Mapping[str, Any] | None = None,
    config: AgentConfig | None = None,
    planner_model: BaseChatModel | None = None,
    summary_model: BaseChatModel | None = None,
    verifier_model: BaseChatModel | None = None,
    checkpointer: Any = None,
    store: Any = None,
    token_counter: TokenCounter | None = None,
    commands: Mapping[str, Callable[[str, Mapping[str, Any]], Any]] | None = None,
    middleware: Sequence[Any] = (),
    policy: TextPolicy | None = None,
    name: str = "replangraph",
) -> CompiledStateGraph:
    """Compile the replanning agent graph.

    ``model`` runs the subtasks and writes the final answer; ``planner_model`` plans
    (default: ``model``); ``summary_model`` compresses context (default: ``model``);
    ``verifier_model`` runs the completion check of ``verify_results`` (default: ``planner_model``).
    ``tools`` go to every agent type; ``agents`` maps agent type to `AgentProfile`
    (a ``default`` type always exists), or to an agent type a feature takes: a `Team` of them
    (each member runs the subtask, one result is kept; ``teams`` may name them too). ``commands``
    maps ``/name`` to a handler ``(args, state) -> str`` for slash commands sent as input (``/plan``, ``/status`` and
    ``/cancel`` are built in). The compiled graph takes MessagesState-style input and
    returns ``final_answer``, ``tasks`` and ``messages``. Questions (``ask_user``) and
    ``approve_plan`` pause the run: they need a ``checkpointer``. With a checkpointer that
    outlives the process (not ``InMemorySaver``) the graph runs with ``durability="sync"``
    unless a call passes its own ``durability=`` (see `default_durability`).

    ``middleware`` wraps the executor's model and tool calls of every subtask: LangChain v1
    ``AgentMiddleware`` (its ``wrap_model_call`` / ``wrap_tool_call``) or any object with those
    methods, first in the list outermost. Middleware with hooks that make no sense inside one
    subtask (``before_model``, ``after_model``, ``before_agent``, ``after_agent``, state keys of
    its own, tools of its own) is refused with a ValueError.

    ``policy`` holds the heuristics that read meaning out of instruction texts (numbered ranges): they may
    group a plan's one-item tasks, add the parts of a range a hand-off skips and annotate overlaps, never drop
    work (default `TextPolicy()`; ``TextPolicy(enabled=False)`` turns them off).
    """
    config = config or AgentConfig()
    policy = policy if policy is not None else TextPolicy()
    if not isinstance(policy, TextPolicy):
        raise TypeError(f"policy must be a TextPolicy, got {type(policy).__name__}")
    if not isinstance(config, AgentConfig):
        raise TypeError(f"config must be an AgentConfig, got {type(config).__name__}")
    _check_model(model, "model")
    for role, extra in (
        ("planner_model", planner_model),
        ("summary_model", summary_model),
        ("verifier_model", verifier_model),
    ):
        if extra is not None:
            _check_model(extra, role)
    model_middleware, tool_middleware = split_middleware(middleware)
    # Agent types of other kinds (a Team) are a feature's: offered to the features, refused if none takes them.
    kinds = {name: agent for name, agent in (agents or {}).items() if not isinstance(agent, AgentProfile)}
    profiles = resolve_profiles({n: a for n, a in (agents or {}).items() if n not in kinds}, tools)
    config = with_workspace(config, profiles)
    monitor = ContextMonitor(config, model, token_counter)
    # The features, built in their registered order (a feature's task rules claim subtasks in this order).
    features: list[Feature] = []
    for make in feature_factories():
        planning = {**profiles, **planning_types(features)}  # a team is an agent type the next features see
        build = Build(
            model,
            profiles,
            planning,
            config,
            monitor,
            planner_model=planner_model,
            verifier_model=verifier_model,
            options={"teams": teams, "commands": commands, "agents": kinds},
            check_model=_check_model,
            policy=policy,
        )
        made = make(build)  # None: not part of this graph (no teams given)
        if made is not None:
            features.append(made)
    features = ordered_features(features)  # rules and hooks run in this order (a feature's ``after``)
    extra_types = planning_types(features)
    unclaimed = [name for name in kinds if name not in extra_types]
    if unclaimed:
        name = unclaimed[0]
        raise TypeError(
            f"agents[{name!r}] must be an AgentProfile, or an agent type a registered feature takes (a Team), got "
            f"{type(kinds[name]).__name__}"
        )
    planning = {**profiles, **extra_types}  # the agent types a plan may name
    feature_types = list(extra_types)  # a team
    warn_stacked_retries(
        {
            "model": model,
            "planner_model": planner_model,
            "summary_model": summary_model,
            "verifier_model": verifier_model,
            **{f"agents[{name!r}].model": p.model for name, p in profiles.items()},
            **{name: m for feature in features for name, m in feature.models.items()},
        },
        config,
    )
    offered = [tool for feature in features for tool in feature.agent_tools]  # ask_user
    for agent_type, profile in profiles.items():
        clash = sorted({t.name for t in profile.tools} & {*TOOLKIT_NAMES, READ_OUTPUT, *(t.name for t in offered)})
        if clash:
            raise ValueError(
                f"agent type {agent_type!r} has a tool named {clash[0]!r}, which replangraph gives every agent"
            )
    reader = read_output_tool(lambda _: None, list, config.max_observation_chars)
    tool_schemas = {name: [*p.tools, *replan_toolkit(None), reader, *offered] for name, p in profiles.items()}
    rules = default_rules(
        monitor,
        tool_schemas,
        rules=[rule for feature in features for rule in feature.rules],
        task_rules=[rule for feature in features for rule in feature.task_rules],
        opening_notes=[feature.opening_note for feature in features if feature.opening_note],
    )
    route = make_router(config, rules)

    # Each feature's state keys and task fields join the engine's, as LangChain's create_agent merges its
    # middleware's state schemas. AgentConfig, the context schema, already holds each feature's settings: a run's
    # context overrides the fields it sets (Studio shows a form).
    task_fields = [feature.task_fields for feature in features]
    state_schema = merged_schema("ReplanState", ReplanState, [f.state for f in features], task_fields)
    output_schema = merged_schema("OutputState", OutputState, [f.output for f in features], task_fields)
    builder = StateGraph(state_schema, context_schema=AgentConfig, input_schema=InputState, output_schema=output_schema)
    meter = Metering([f.on_reply for f in features if f.on_reply], state_schema)
    # The nodes that read the whole state keep the plan message (the queue, in ``messages``) up to date.
    fresh = [feature.on_new_plan for feature in features if feature.on_new_plan]
    planner = Planner(
        planner_model or model,
        planning,
        config,
        monitor,
        feature_types=feature_types,
        on_new_plan=fresh,
        policy=policy,
    )
    builder.add_node(PLANNER, both_paths(planner, PLANNER, new_plan=True, metering=meter))
    # Error handlers turn an unexpected crash in a subtask's step into a failed subtask, not a crashed run.
    executor = Executor(
        model,
        profiles,
        config,
        monitor,
        tool_schemas=tool_schemas,
        feature_wrappers=[w for feature in features for w in feature.model_wrappers],
        middleware=model_middleware,
        policy=policy,
    )
    builder.add_node(
        EXECUTOR,
        both_paths(executor, EXECUTOR, metering=meter),
        error_handler=fail_the_subtask(goto=HANDLER_TARGETS[EXECUTOR]),
    )
    tool_runner = ToolRunner(
        profiles,
        config,
        feature_types=feature_types,
        feature_wrappers=[w for feature in features for w in feature.tool_wrappers],
        middleware=tool_middleware,
        answer_takers=[feature.takes_answers for feature in features if feature.takes_answers],
        stops=[feature.stop for feature in features if feature.stop],
        policy=policy,
    )
    builder.add_node(
        TOOLS,
        both_paths(tool_runner, TOOLS, new_plan=False),
        error_handler=fail_running_tool_calls(goto=HANDLER_TARGETS[TOOLS]),
    )
    notes = [feature.summary_note for feature in features if feature.summary_note]
    compressor = Compressor(summary_model or model, profiles, tool_schemas, config, monitor, summary_notes=notes)
    builder.add_node(
        COMPRESSOR,
        both_paths(compressor, COMPRESSOR, metering=meter),
        error_handler=fail_the_subtask(goto=HANDLER_TARGETS[COMPRESSOR]),
    )
    hooks = [feature.after_replan for feature in features if feature.after_replan]
    replanner = Replanner(
        planner_model or model, planning, config, monitor, feature_types=feature_types, after_round=hooks, policy=policy
    )
    stops = [feature.stop for feature in features if feature.stop]
    finalizer = Finalizer(
        model, config, monitor, stops=stops, before_answer=[f.before_answer for f in features if f.before_answer]
    )
    builder.add_node(REPLANNER, both_paths(replanner, REPLANNER, new_plan=False, metering=meter))
    builder.add_node(FINALIZE, both_paths(finalizer, FINALIZE, new_plan=False, metering=meter))
    joining = nodes_where(features, lambda spec: spec.joins_tools)  # verifier, ask, a team's start and merge
    routed = [EXECUTOR, COMPRESSOR, REPLANNER, FINALIZE, *nodes_where(features, lambda spec: spec.routed)]
    after_plan = [EXECUTOR, FINALIZE, *nodes_where(features, lambda spec: spec.after_plan)]
    entries = [feature.entry(config) for feature in features if feature.entry]
    for feature in features:
        for node_name, spec in feature.nodes.items():
            new_plan = None if spec.joins_tools else False  # those read the state: they keep the plan message
            node = both_paths(spec.node, node_name, new_plan, meter, pauses=spec.pauses)
            builder.add_node(node_name, node, error_handler=spec.error_handler)
            if spec.joins_tools:
                builder.add_edge(node_name, TOOLS)  # parallel branches join there, like model turns
                continue
            targets = [n for n in after_plan if n != node_name] if spec.goes_like_planning else routed
            own = spec.router(route) if spec.router else route
            builder.add_conditional_edges(node_name, own, list(dict.fromkeys([*targets, *spec.leads_to])))

    entry_nodes = [node for feature in features for node in feature.entry_nodes]  # a slash command's node
    start = start_router(entries, route)  # ``/resume`` goes where the router sends the run
    starts = list(dict.fromkeys([PLANNER, *entry_nodes, *routed, END]))
    starting = [feature.on_run_start for feature in features if feature.on_run_start]
    if starting:  # every input passes the run-start hooks first (the deadline starts there), then goes its way
        builder.add_node(RUN_START, both_paths(RunStarter(config, starting, start), RUN_START))
        builder.add_edge(START, RUN_START)
        builder.add_conditional_edges(RUN_START, start, starts)
    else:
        builder.add_conditional_edges(START, start, starts)
    # A fresh plan has no windows or replan requests; the replanner settles every request.
    builder.add_conditional_edges(PLANNER, route, after_plan)
    builder.add_edge(EXECUTOR, TOOLS)  # parallel model turns join there; a conditional edge would copy the
    # whole state for every branch (LangGraph's fresh read), and the join needs no decision
    builder.add_edge(COMPRESSOR, TOOLS)
    builder.add_conditional_edges(TOOLS, route, routed)
    settling = nodes_where(features, lambda spec: spec.routed and not spec.joins_tools)  # the goal check
    builder.add_conditional_edges(REPLANNER, route, [EXECUTOR, COMPRESSOR, *joining, *settling, FINALIZE])
    builder.add_edge(FINALIZE, END)

    graph = builder.compile(checkpointer=checkpointer, store=store, name=name)
    defaults: dict[str, Any] = {"recursion_limit": recursion_limit(config), "max_concurrency": branch_pool_size(config)}
    if durability := default_durability(checkpointer):
        defaults["configurable"] = {CONFIG_KEY_DURABILITY: durability}
    return graph.with_config(**defaults)


def default_durability(checkpointer: Any) -> str | None:
    """The durability a graph with ``checkpointer`` runs with when a call names none: ``"sync"`` for one
    that outlives the process, None (LangGraph's ``"async"``) for ``InMemorySaver`` or none.

    With ``"async"`` a step's checkpoint is written while the next step runs, so a database that fails
    mid-run is only noticed when the run ends, and a resume repeats every tool call made since. With
    ``"sync"`` a failed write stops the run before the next step: a resume repeats at most the calls of
    the step whose write failed. LangGraph reads the default from the graph's ``configurable``, where
    a subgraph's inherited mode goes too; a call's own ``durability=`` wins.
    """
    if checkpointer is None or isinstance(checkpointer, bool | InMemorySaver):
        return None
    return "sync"


def branch_pool_size(config: AgentConfig) -> int:
    """The run config's ``max_concurrency`` the graph is compiled with.

    LangGraph runs parallel branches in a pool of that size (default: cores + 4, at most
    32): room for our subtasks plus two, the verifier beside the model turns, or the tools
    node and the writes of the calls it runs as tasks beside those calls (`in_flight_bound`).
    Runnables called inside the nodes (a tool's ``.batch()``) inherit it too, so it never
    drops below that default. A run config's own value still wins.
    """
    return pool_size(config.max_concurrency)


def pool_size(max_concurrency: int) -> int:
    """`branch_pool_size` for a run of ``max_concurrency``."""
    return max(max_concurrency + 2, min(32, (os.cpu_count() or 1) + 4))
