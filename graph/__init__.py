"""replangraph: a LangGraph planning agent whose running subtasks can change their own queue."""

from replangraph.builder import build_graph
from replangraph.config import AgentConfig, AgentProfile
from replangraph.events import EVENT_NAMES
from replangraph.queue.tasks import Task, TaskStatus, plan_summary
from replangraph.state import InputState, OutputState, ReplanState

__all__ = [
    "AgentConfig",
    "AgentProfile",
    "EVENT_NAMES",
    "InputState",
    "OutputState",
    "ReplanState",
    "Task",
    "TaskStatus",
    "Team",
    "build_graph",
    "plan_summary",
]
__version__ = "0.8.0"


def __getattr__(name: str):
    """``Team`` comes from the teams feature (nodes/teams/), imported when first asked for."""
    if name == "Team":
        from replangraph.nodes.teams.teams import Team

        return Team
    raise AttributeError(f"module 'replangraph' has no attribute {name!r}")
