"""commands node: answers a slash command sent as input (or says why a message sent while several questions
wait was not used) (``/plan``, ``/status``, ``/cancel``, ``/resume``, yours).

After it, a run paused for the user is paused again (its question or plan is shown
anew), ``/cancel`` sends the run to the finalizer, and ``/resume`` continues a run that
stopped between steps; other commands change nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage

from replangraph.config import AgentConfig
from replangraph.events import emit
from replangraph.nodes.human.hooks import (
    CANCEL,
    RESUME,
    CommandHandler,
    answer_command,
    parse_command,
    paused,
    pending_command,
    unfinished,
    waiting_for,
)
from replangraph.nodes.human.interrupts import is_cancel
from replangraph.nodes.human.names import COMMAND_ANSWERED
from replangraph.run_config import Configured
from replangraph.state import StateUpdate


class CommandRunner(Configured):
    """Replies to the thread's last message, a slash command, with an AI message.

    No model call, so no ``acall``: under ``ainvoke`` it runs in replangraph's pool (``both_paths``), where a
    user's command handler may block without holding up the event loop."""

    def __init__(self, handlers: Mapping[str, CommandHandler], config: AgentConfig):
        self.handlers = dict(handlers)
        self.base_config = config

    def __call__(self, state: Mapping[str, Any]) -> StateUpdate:
        text = pending_command(state, self.config.cancel_word) or ""
        name = (parse_command(text) or ("", ""))[0]
        update: StateUpdate = {}
        if not text:  # a message sent while several questions wait (see `answer_waiting`)
            waits = waiting_for(state)
            reply = (
                f"Your message was not used as an answer: the run waits for {len(waits)} answers ("
                + "; ".join(waits)
                + "). Answer each question in its own reply (resume its interrupt), or send "
                + f"{self.config.cancel_word} to stop the run."
            )
        elif name == CANCEL or is_cancel(text, self.config):
            if unfinished(state) and not state.get("cancelled"):
                reply = "Cancelled: the run stops here, and its final answer lists what was completed."
                update["cancelled"] = True
            else:
                reply = "Nothing to cancel: no run is in progress on this thread."
        elif name == RESUME:
            if not unfinished(state):
                reply = "Nothing to resume: no run is in progress on this thread."
            elif paused(state):
                reply = "The run is waiting for you: " + "; ".join(waiting_for(state)) + "."
            else:
                reply = "Resuming the run where it stopped."
        else:
            reply = answer_command(text, state, self.handlers, self.config)
        emit(COMMAND_ANSWERED, command=name, reply=reply)
        update["messages"] = [AIMessage(reply, name="replangraph")]
        return update
