"""The budget on the command line: ``--token-budget``; its event says itself (``message``)."""

from __future__ import annotations

from replangraph.app.flags import Flag, positive_int
from replangraph.nodes.budget.names import BUDGET_SPENT

FLAGS = (
    Flag(
        "--token-budget",
        "token_budget",
        "tokens (input and output, every model call) after which the run stops with what it has",
        value=positive_int,
        metavar="N",
    ),
)
EVENT_SAMPLES = {
    BUDGET_SPENT: {"limits": {"token_budget": 10}, "message": "the token budget token_budget=10 was spent"},
}
