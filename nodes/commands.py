"""commands node: answers a slash command sent as input (``/plan``, ``/status``, ``/cancel``, your own).

After it, a run that has not ended goes on from where it was: a waiting question or
plan is shown again, and ``/cancel`` sends the run to the finalizer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage

from replangraph.commands import CANCEL, CommandHandler, answer_command, parse_command, pending_command, unfinished
from replangraph.config import AgentConfig, Configured
from replangraph.events import COMMAND_ANSWERED, emit
from replangraph.interrupts import is_cancel
from replangraph.state import StateUpdate


class CommandRunner(Configured):
    """Replies to the thread's last message, a slash command, with an AI message."""

    def __init__(self, handlers: Mapping[str, CommandHandler], config: AgentConfig):
        self.handlers = dict(handlers)
        self.base_config = config

    def __call__(self, state: Mapping[str, Any]) -> StateUpdate:
        text = pending_command(state) or ""
        name = (parse_command(text) or ("", ""))[0]
        update: StateUpdate = {}
        if name == CANCEL or is_cancel(text, self.config):
            if unfinished(state) and not state.get("cancelled"):
                reply = "Cancelled: the run stops here, and its final answer lists what was completed."
                update["cancelled"] = True
            else:
                reply = "Nothing to cancel: no run is in progress on this thread."
        else:
            reply = answer_command(text, state, self.handlers, self.config)
        emit(COMMAND_ANSWERED, command=name, reply=reply)
        update["messages"] = [AIMessage(reply, name="replangraph")]
        return update
