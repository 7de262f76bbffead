"""What a node's update costs the state: the plan message reads only the windows of the tasks it lists, and
a write that changes only a task's counters keeps the queue's lookups."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from replangraph.plan_message import PLAN_MESSAGE_ID, WaitingQuestions, plan_message
from replangraph.queue.index import QueueIndex, TaskQueue, apply_writes
from replangraph.queue.tasks import PLAN_MESSAGE_TASKS, new_task, plan_markdown, ready_tasks


def asking_window(question: str) -> list:
    call = {"name": "ask_user", "args": {"question": question}, "id": f"ask-{question}", "type": "tool_call"}
    return [HumanMessage("Your subtask"), AIMessage("", tool_calls=[call])]


class Reads(dict):
    """Windows that remember which were read."""

    def __init__(self, *args):
        super().__init__(*args)
        self.read: set[str] = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)


def running_queue(n: int) -> dict:
    return {f"t{i}": {**new_task(f"t{i}", f"do t{i}", position=[i]), "status": "in_progress"} for i in range(n)}


def test_the_plan_message_reads_only_the_windows_of_the_tasks_it_lists():
    n = 3 * PLAN_MESSAGE_TASKS
    tasks = running_queue(n)
    windows = Reads({f"t{i}": asking_window(f"q{i}") for i in range(n)})
    text = plan_markdown(tasks, WaitingQuestions(windows))
    assert windows.read == {f"t{i}" for i in range(PLAN_MESSAGE_TASKS)}
    eager = {task_id: f"q{task_id[1:]}" for task_id in tasks}
    assert text == plan_markdown(tasks, eager)
    assert "- [ ] t0: do t0 — *waiting for your answer:* q0" in text.splitlines()


def test_waiting_questions_hold_only_the_unanswered_ones():
    windows = {"a": asking_window("Which one?"), "b": [HumanMessage("Your subtask")], "c": []}
    waiting = WaitingQuestions(windows)
    assert dict(waiting) == {"a": "Which one?"}
    assert waiting.get("b") is None and waiting.get("missing") is None
    assert len(waiting) == 1


def test_the_plan_message_shows_the_question_a_node_s_update_leaves_waiting():
    tasks = running_queue(2)
    shown = AIMessage(plan_markdown(tasks), id=PLAN_MESSAGE_ID + "1", name="replangraph")
    state = {"messages": [shown], "tasks": tasks, "windows": {}}
    message = plan_message(state, {"windows": {"t1": asking_window("Red or blue?")}})
    assert message is not None and message.id == shown.id
    assert "- [ ] t1: do t1 — *waiting for your answer:* Red or blue?" in message.content.splitlines()


def test_a_write_of_counters_only_keeps_the_lookups_and_counts_the_calls():
    queue = apply_writes(TaskQueue(), [{**running_queue(3), "t3": new_task("t3", "last", position=[3])}])
    before = queue.index
    queue = apply_writes(queue, [{"t0": {"model_calls": 2, "elapsed_s": 1.5}, "t1": {"elapsed_s": 0.2}}])
    assert queue.index == QueueIndex.build(queue)
    assert queue.index.model_calls == before.model_calls + 2
    assert queue.index.active is before.active and queue.index.ready is before.ready
    queue = apply_writes(queue, [{"t0": {"status": "completed", "model_calls": 3}}])
    assert queue.index == QueueIndex.build(queue)
    assert [t["id"] for t in ready_tasks(queue)] == ["t3"]
