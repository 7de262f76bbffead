"""The process exits when the run ends (issue 33): a model server that accepts the connection and never answers,
``step_timeout_s=2``, a run in a process of its own (tests/helpers/hung_run.py). The abandoned calls' threads are
daemon threads and the OpenAI client gives up at the step's limit too, so nothing keeps the interpreter alive."""

from __future__ import annotations

import pytest
from hung_run import STEP_TIMEOUT_S, run_and_exit, silent_server

pytestmark = pytest.mark.system  # a process and a loopback server

EXIT_WITHIN_S = 2.0
"""Seconds from the run's end to the process's exit (the interpreter's own teardown takes about 0.6 s here)."""


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_the_process_exits_within_seconds_of_the_runs_end(mode):
    with silent_server() as base_url:
        run_s, to_exit_s, output = run_and_exit(base_url, mode, wait_s=20)
    assert run_s is not None, output  # the run ended: every call was cut at step_timeout_s
    assert run_s < STEP_TIMEOUT_S * 6, output
    assert to_exit_s is not None and to_exit_s <= EXIT_WITHIN_S, (to_exit_s, output)
