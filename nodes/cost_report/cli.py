"""The cost report on the command line: ``--report-cost``."""

from __future__ import annotations

from replangraph.app.flags import Flag

FLAGS = (Flag("--report-cost", "report_cost", "end the final answer with the goal's model calls and tokens by model"),)
