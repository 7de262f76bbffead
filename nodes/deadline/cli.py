"""The deadline on the command line: ``--deadline``; its event says itself (``message``)."""

from __future__ import annotations

from replangraph.app.flags import Flag, positive_number
from replangraph.nodes.deadline.names import DEADLINE_PASSED

FLAGS = (
    Flag(
        "--deadline",
        "deadline_s",
        "seconds after which the goal's run stops with what it has (time waiting for your answers counts)",
        value=positive_number,
        metavar="SECONDS",
    ),
)
EVENT_SAMPLES = {
    DEADLINE_PASSED: {"deadline_s": 60, "overrun_s": 2.5, "message": "the deadline deadline_s=60 passed (2.5 s ago)"},
}
