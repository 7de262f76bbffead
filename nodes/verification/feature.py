"""The completion check (``verify_results``) as one `Feature`: the verifier node and its task rule.

It is always part of the graph, since ``verify_results`` may be turned on for one run (its context); with
it off, no answer waits for the check and the rule never claims a subtask.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replangraph.config import AgentConfig, AgentProfile
from replangraph.context.window_monitor import ContextMonitor
from replangraph.features import Build, Feature, FeatureNode
from replangraph.llm.reading import ends_with_answer
from replangraph.names import TOOLS
from replangraph.nodes.verification.goal_check import GoalCheck, goal_left_unchecked, goal_unchecked
from replangraph.nodes.verification.names import GOAL_CHECK, VERIFIER
from replangraph.nodes.verification.state import VerificationState, VerifiedTask
from replangraph.nodes.verification.verifier import Verifier, let_results_stand
from replangraph.policy import DEFAULT_POLICY, TextPolicy
from replangraph.routing import Rule, TaskRule, window_rule


def feature(build: Build) -> Feature:
    """The completion check, judged by the verifier model (default: the planner's, else the graph's)."""
    judge = build.verifier_model or build.planner_model or build.model
    return verification_feature(judge, build.profiles, build.config, build.monitor, build.policy)


def verification_feature(
    model: Any,
    profiles: Mapping[str, AgentProfile],
    config: AgentConfig,
    monitor: ContextMonitor,
    policy: TextPolicy = DEFAULT_POLICY,
) -> Feature:
    """The verifier (``model`` judges) and the rule that sends it every answer waiting for its check. A
    crash in the check lets the answers stand."""
    verifier = Verifier(model, profiles, config, monitor, policy)
    node = FeatureNode(verifier, error_handler=let_results_stand(goto=TOOLS))
    # A subtask whose window ends with an answer waits for the check (one verifier node checks every
    # waiting answer) and keeps its slot meanwhile.
    waiting = TaskRule("answer_waiting", "verification", running=window_rule(ends_with_answer, VERIFIER))
    # Once every subtask has settled, the results are checked against the goal before the final answer; a crash
    # there lets the results stand (the run goes on to the router, which finalizes).
    goal = FeatureNode(GoalCheck(verifier), error_handler=goal_left_unchecked, joins_tools=False)
    unchecked = Rule("goal_unchecked", "verification", goal_unchecked, "dispatch")
    return Feature(
        "verification",
        nodes={VERIFIER: node, GOAL_CHECK: goal},
        rules=[unchecked],
        task_rules=[waiting],
        state=VerificationState,
        task_fields=VerifiedTask,
        takes_answers=lambda settings: settings.verify_results,  # the verifier ends an answered subtask
    )
