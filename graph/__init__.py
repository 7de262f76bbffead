"""replangraph: a LangGraph planning agent whose running subtasks can change their own queue."""

from .builder import build_graph
from .config import AgentConfig, AgentProfile
from .events import EVENT_NAMES
from .queue import Task, TaskStatus, plan_summary
from .state import InputState, OutputState, ReplanState
from .teams import Team

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
