"""The loopback OpenAI-compatible server as a process of its own, for tests that kill it (a real server dying).

``python loopback_process.py PORT [hold]``: serves on 127.0.0.1:PORT (0: a free port) and prints ``PORT n`` once
it listens. Every chat request prints ``REQUEST what`` (the subtask's id, ``plan``, ``check`` or ``final``) before it is
answered; with ``hold``, the request of subtask 2 prints ``HOLDING`` and is never answered, so the test can kill
the process while the client waits on it. The run: a plan of three subtasks, each finding one colour, and a
final answer listing what the subtasks found.
"""

from __future__ import annotations

import re
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from openai_loopback import OpenAILoopback  # noqa: E402

from replangraph.testing import ScriptedRequest, tool_call  # noqa: E402

GOAL = "Find the colour of each of the three flags: subtask per flag."
COLOURS = {"1": "crimson-4471", "2": "teal-8830", "3": "amber-1206"}


def say(line: str) -> None:
    print(line, flush=True)


def responder(hold: bool):
    def respond(request: ScriptedRequest):
        if "Verdict" in request.tool_names:  # the completion check: every result is complete
            say("REQUEST check")
            return tool_call("Verdict", {"complete": True, "remaining_tasks": [], "reason": "the colour is named"})
        if "Plan" in request.tool_names:
            say("REQUEST plan")
            tasks = [{"id": n, "content": f"Find the colour of flag {n}", "depends_on": []} for n in COLOURS]
            return tool_call("Plan", {"tasks": tasks})
        found = re.search(r"Your subtask \((\w+)\)", request.prompt)
        if found:
            say(f"REQUEST {found.group(1)}")
            if hold and found.group(1) == "2":
                say("HOLDING")
                threading.Event().wait()  # never answered: the process is killed meanwhile
            return f"COLOUR {found.group(1)}: {COLOURS[found.group(1)]}"
        say("REQUEST final")
        return "FINAL\n" + "\n".join(sorted(set(re.findall(r"COLOUR \d: [\w-]+", request.prompt))))

    return respond


if __name__ == "__main__":
    port, hold = int(sys.argv[1]), sys.argv[2:] == ["hold"]
    with OpenAILoopback(responder(hold), models=["local"], port=port) as server:
        say(f"PORT {server.server.server_port}")
        threading.Event().wait()
