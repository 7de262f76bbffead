"""A thread driven from the terminal: the run streamed, its pauses (questions, the plan) answered inline
or with ``--answer``, and the command to come back with."""

from __future__ import annotations

import shlex
import sys
import tempfile
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing
from typing import Any

from langgraph.types import Command

from replangraph import ModelServerDown
from replangraph.app.console import (
    EXIT_BUSY,
    EXIT_CONNECTION,
    EXIT_CRASHED,
    EXIT_DONE,
    EXIT_INTERRUPTED,
    EXIT_REPORT,
    EXIT_WAITING,
    Output,
    is_tty,
    run_finished,
)
from replangraph.app.feature_cli import (
    cancels,
    command_in,
    pause_hint,
    pause_key,
    pause_lines,
    pause_order,
    reply_events,
    waiting_notes,
)
from replangraph.app.server import lost_server, lost_server_message, paused_message
from replangraph.app.settings import SETTINGS_KEY, stored_settings
from replangraph.durable import Lease, LeaseLost, is_postgres_url, masked_url
from replangraph.events import PLAN_COMPLETED
from replangraph.queue import preview
from replangraph.resume import unfinished

NO_INPUT = object()
"""`Session.drive`: nothing to stream first; the run is paused on questions."""


class ServerLost(ConnectionError):
    """The server that keeps the run (a Temporal server) stopped answering while the command followed the run:
    the run is kept there and goes on once it is back. The message names the server."""


class RunLost(RuntimeError):
    """The run ended where it ran without a final state (a Temporal workflow that failed, was terminated or timed
    out): nothing is left to resume. The message says how it ended."""


def db_label(db: Any) -> str:
    """The database as it may be shown: a URL without its password, a path as it is."""
    return masked_url(str(db)) if is_postgres_url(db) else str(db)


# Pauses: what the run asks, shown and answered


def sorted_interrupts(interrupts: Sequence[Any]) -> list[Any]:
    """Pending interrupts in the order they are listed and answered, as their features order them (human in the
    loop: the plan first, then by task id)."""
    return sorted(interrupts, key=lambda item: pause_order(item.value))


def request_key(item: Any) -> Any:
    """What an interrupt asks, stable when the run asks it again after a command (its id is not)."""
    found = pause_key(item.value)
    return item.id if found is None else found


MAX_ANSWER_LINES = 500


def read_answer() -> str:
    """One answer typed or pasted at the prompt. A pasted plan edit may span lines: after a line that
    opens more brackets than it closes, lines are read until they balance; after an opening fence,
    up to the closing one."""
    lines = [input("> ")]
    fenced = lines[0].strip().startswith("```")

    def whole(text: str) -> bool:
        if fenced:
            return len(lines) > 1 and lines[-1].strip() == "```"
        return sum(text.count(c) for c in "[{") <= sum(text.count(c) for c in "]}")

    while not whole("\n".join(lines)) and len(lines) < MAX_ANSWER_LINES:
        try:
            lines.append(input("… "))
        except EOFError:
            break
    return "\n".join(lines)


def work_left(snapshot: Any) -> bool:
    """Whether the checkpoint has a step to run or finish. ``next`` alone misses a step whose tasks all
    finished (their writes are saved) when the run stopped before the step was committed."""
    return bool(snapshot.next or snapshot.tasks)


def succeeded(values: Mapping[str, Any]) -> bool:
    """Whether the run ended with the model's answer: not cancelled, every subtask completed (or replanned), and
    the final answer is the model's, not the fallback report (``stop_reason``)."""
    from replangraph.nodes.finalize import unresolved  # loaded when used: the CLI starts fast

    tasks = values.get("tasks") or {}
    if not tasks or not values.get("final_answer") or values.get("stop_reason"):  # a cancelled run has a reason
        return False
    return not unresolved(tasks, values.get("replans") or [])


class LeaseChecked:
    """``graph`` as `Output.stream` streams it, checking the thread's ``lease`` after each step (a ``values``
    chunk): a lease another process took stops the run there (`LeaseLost`), before its next step starts."""

    def __init__(self, graph: Any, lease: Lease):
        self.graph, self.lease = graph, lease

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        with closing(self.graph.stream(*args, **kwargs)) as chunks:
            for chunk in chunks:
                yield chunk
                if chunk[0] == "values":
                    self.lease.check()


class Session:
    """One thread driven from the terminal: streams it, answers its pauses, and says how to come back.

    ``graph`` is the compiled graph, or anything with its ``stream`` and ``get_state`` (a run on Temporal:
    ``replangraph.temporal.remote.TemporalRun``, with ``temporal`` the server's address)."""

    def __init__(
        self,
        graph: Any,
        thread: str,
        settings: Mapping[str, Any],
        db: str | None,
        output: Output,
        temporal: str | None = None,
    ):
        self.graph = graph
        self.thread = thread
        self.settings = settings
        self.db = db  # as given with --db (None: the default), for the resume command
        self.output = output
        self.config = {
            "configurable": {"thread_id": thread},
            "metadata": {SETTINGS_KEY: stored_settings(settings)},
        }
        self.answers: list[str] = []  # --answer values not used yet
        self.held: dict[Any, str] = {}  # answers given to questions still waiting (see `collect`)
        self.inline = is_tty(sys.stdin) and output.interactive  # questions asked inline
        self.lease: Lease | None = None  # the thread's lease, checked after each step
        self.temporal = temporal  # the Temporal server's address when the run is a workflow there

    def say(self, text: str = "") -> None:
        self.output.note(text)

    def started(self) -> None:
        """The first line: the thread, and how to come back to it."""
        self.say(f"thread: {self.thread} (resume with: {self.resume_command()})")
        self.output.result({"event": "run_started", "thread": self.thread, "resume": self.resume_command()})

    def stopped(self, code: int, reason: str, text: str) -> int:
        """The command ends before the run does (``text`` for people, ``reason`` for programs)."""
        self.say(text)
        resume = self.resume_command()
        self.output.result({"event": "stopped", "exit_code": code, "reason": reason, "resume": resume})
        return code

    def resume_command(self, answers: int = 0) -> str:
        parts = ["replangraph", "resume"]
        if self.temporal:
            parts += ["--temporal", shlex.quote(self.temporal)]
        parts += ["--thread", shlex.quote(self.thread)]
        parts += ['--answer "..."'] * answers
        if self.db:  # as given: a URL's password masked would not connect
            parts += ["--db", shlex.quote(str(self.db))]
        return " ".join(parts)

    def guarded(self, inputs: Any, command: str | None = None) -> int:
        """`drive`, with Ctrl-C ending the command (exit 130) and saying how to resume."""
        try:
            return self.drive(inputs, command)
        except BrokenPipeError:  # the output's reader went away: nothing more can be shown (`cli.main` ends)
            raise
        except KeyboardInterrupt:
            self.say()
            text = f"Stopped. The checkpoint keeps the run; resume with: {self.resume_command()}"
            if self.temporal:  # only this command stopped: the workflow goes on
                again = self.resume_command()
                text = f"Stopped following the run; it goes on on Temporal. Follow it again with: {again}"
            return self.stopped(EXIT_INTERRUPTED, "interrupted", text)
        except RunLost as lost:
            return self.stopped(EXIT_REPORT, "run lost", str(lost))
        except ServerLost as lost:  # nothing lost: the server keeps the run
            text = f"{lost} It keeps the run: once it answers again, follow it with: {self.resume_command()}"
            return self.stopped(EXIT_CONNECTION, "server lost", text)
        except LeaseLost as lost:  # another process runs the thread now: the sentence offers no resume command
            return self.stopped(EXIT_BUSY, "lease lost", str(lost))
        except ModelServerDown as down:  # paused, not failed: nothing was lost, and no limit was too small
            text = (
                f"{paused_message(self.settings, down)} The checkpoint keeps the run: once the server answers "
                f"again, resume with: {self.resume_command()}"
            )
            if self.temporal:  # the workers' model server, which this command does not know
                text = (
                    f"A worker's model call got no answer: {down}. Temporal keeps the run, nothing failed: once "
                    f"the server answers again, resume with: {self.resume_command()}"
                )
            return self.stopped(EXIT_CONNECTION, "model server stopped answering", text)
        except Exception as exc:  # the steps checkpointed before the crash are kept; the traceback goes to a file
            saved = self.save_traceback(exc)
            text = (
                f"The run stopped on an unexpected error ({type(exc).__name__}: {preview(str(exc), 200)}); "
                f"the traceback is in {saved}. Once the cause is fixed, resume with: {self.resume_command()}"
            )
            return self.stopped(EXIT_CRASHED, "crashed", text)

    def save_traceback(self, exc: BaseException) -> str:
        """Write ``exc``'s traceback to a file in the temp folder (named after the thread); its path."""
        with tempfile.NamedTemporaryFile(
            "w", prefix=f"replangraph-{self.thread}-", suffix=".txt", delete=False, encoding="utf-8"
        ) as file:
            file.write("".join(traceback.format_exception(exc)))
        return file.name

    def drive(self, inputs: Any, command: str | None = None) -> int:
        """Run ``inputs`` (``None``: go on from the checkpoint; ``NO_INPUT``: only answer what waits; ``command``:
        the slash command they hold) and every answer after it, until the run ends (its exit code), a command
        that ended nothing is answered (0), or the run waits for an answer nobody can give here (3)."""
        events: list = []
        while True:
            if inputs is not NO_INPUT:
                events = []
                quiet = reply_events() if command else ()
                graph = self.graph if self.lease is None else LeaseChecked(self.graph, self.lease)
                self.output.stream(graph, inputs, self.config, quiet, events, self.settings.get("max_steps"))
                if command is not None:
                    self.show_reply(command, events)
            snapshot = self.graph.get_state(self.config)
            if snapshot.interrupts:
                step = self.collect(sorted_interrupts(snapshot.interrupts))
                if step is None:
                    return self.waiting(sorted_interrupts(snapshot.interrupts))
                inputs, command = step
                continue
            answered = command is not None and any(e["event"] in reply_events() for e in events)
            if self.temporal and answered and work_left(snapshot):  # answered while the run goes on there
                return self.answered(snapshot.values)
            if work_left(snapshot):  # a stream that ended without finishing and without a question: not expected
                text = f"The run stopped before its end; resume with: {self.resume_command()}"
                return self.stopped(EXIT_REPORT, "stopped before its end", text)
            if command is not None and not any(e["event"] == PLAN_COMPLETED for e in events):
                return self.answered(snapshot.values)
            return self.finish(snapshot.values)

    def answered(self, values: Mapping[str, Any]) -> int:
        """After a command that neither paused nor ended a run (``/status`` on a stopped thread, say)."""
        ended = not unfinished(values)
        if not ended and self.temporal:
            self.say(f"The run on thread {self.thread} goes on on Temporal; follow it with: {self.resume_command()}")
        elif not ended:
            self.say(f"The run on thread {self.thread} has not ended; continue it with: {self.resume_command()}")
        resume = self.resume_command()
        self.output.result({"event": "command_done", "exit_code": EXIT_DONE, "run_ended": ended, "resume": resume})
        return EXIT_DONE

    def show_reply(self, command: str, events: Sequence[Mapping[str, Any]]) -> None:
        """The graph's whole reply to a command sent as input (the event line would show a preview)."""
        replies = [e.get("reply") or "" for e in events if e["event"] in reply_events()]
        text = "\n".join(replies) if replies else "(no reply)"
        self.say(f"{command}:\n  " + text.replace("\n", "\n  "))

    def collect(self, pending: Sequence[Any]) -> tuple[Any, str | None] | None:
        """What to send next: ``Command(resume={id: answer})`` once every waiting question has an answer, or a
        slash command as new input (the graph answers it and asks again); None when an answer cannot be had here.

        Answers are sent all at once: a resume that answered only some questions would be dropped by a command
        sent after it. Answers given before a command are kept (by question) and used when it is asked again."""
        for item in pending:
            if request_key(item) in self.held:
                continue
            answer = self.next_answer(item.value)
            if answer is None:
                return None
            if cancels(answer):  # cancels the run at once, however many questions wait
                self.held.clear()
                if len(pending) == 1:
                    return Command(resume={item.id: answer}), None
                # Sent as input: the commands node cancels once (parallel ask nodes that each answered the cancel
                # word would write `cancelled` in the same step, which the state's channel refuses).
                return {"messages": [("user", answer)]}, answer
            command = command_in(answer)
            if command is not None:
                return {"messages": [("user", command)]}, command
            self.held[request_key(item)] = answer
        return Command(resume={item.id: self.held.pop(request_key(item)) for item in pending}), None

    def next_answer(self, value: Any) -> str | None:
        """The next ``--answer``, else one typed at the terminal, else None."""
        if self.answers:
            answer = self.answers.pop(0)
            self.say("\n".join(pause_lines(value)))
            self.say(f"  answer: {answer}")
            return answer
        if not self.inline:
            return None
        self.say("\n".join(pause_lines(value)))
        self.say(f"  [{pause_hint(value)}]")
        try:
            return read_answer()
        except EOFError:  # stdin closed: stop asking, and say how to answer later
            self.inline = False
            self.say()
            return None

    def waiting(self, pending: Sequence[Any]) -> int:
        self.say()
        if self.held:
            self.say(f"Not every question has an answer, so the {len(self.held)} given were not sent.")
        self.say(f"The run is waiting for {len(pending)} answer(s):")
        for number, item in enumerate(pending, 1):
            lines = pause_lines(item.value)
            self.say(f"  [{number}] " + "\n      ".join(lines))
        for note in waiting_notes([item.value for item in pending]):
            self.say(note)
        keeper = "Temporal" if self.temporal else "The checkpoint"
        self.say(f"{keeper} keeps the run. Answer in the order listed with:")
        self.say(f"  {self.resume_command(len(pending))}")
        self.output.result(
            {
                "event": "waiting",
                "exit_code": EXIT_WAITING,
                "thread": self.thread,
                "interrupts": [{"id": i.id, "value": i.value} for i in pending],
                "resume": self.resume_command(len(pending)),
            }
        )
        return EXIT_WAITING

    def finish(self, values: Mapping[str, Any]) -> int:
        """The run ended: its final answer, and its exit code."""
        if self.answers:
            self.say(f"{len(self.answers)} --answer value(s) were not needed and were not used.")
        self.say(f"\nFinal answer:\n{values.get('final_answer', '')}")
        code = EXIT_DONE if succeeded(values) else EXIT_REPORT
        error = None
        if code == EXIT_REPORT and not values.get("cancelled") and lost_server(values):
            code = EXIT_CONNECTION
            error = lost_server_message(self.settings)
            self.say(error)
        extra = {"error": error} if error else {}
        self.output.result(run_finished(code, self.thread, values, self.output.usage.total, **extra))
        return code
