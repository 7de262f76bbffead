"""The teams benchmark's scripted world: a quiz, three members of unequal accuracy, a judge and voters.

The quiz has Q questions ("Q7: What is the capital of Korvania?"), each with one true
capital and four plausible wrong ones (other survey city names). The planner puts one
question in each subtask and gives every subtask the agent type under test: one member,
or a team of all three. Every behaviour below is decided by a stable hash of
(seed, question, who), never by call order, so parallel branches stay deterministic.

- Members (careful 80 %, fast 55 %, sloppy 40 % by default): a member is right on a
  question when its hash falls under its accuracy; otherwise it names one of the four
  wrong capitals (by hash), so two wrong members agree about a quarter of the time.
Judges and voters answer through their schema tools (``Pick``, ``Ballot``, ``Fusion``) when bound,
else in text.

- Judge (``best``; the planner's model): when some candidate is right it recognises the
  true capital with probability J (0.85 by default) and picks the first candidate that
  has it; otherwise (not recognised, or no candidate is right) it picks a candidate
  uniformly by hash.
- Voters (``vote``; each member's own model): self-consistency. A voter answers the
  question itself (as it would alone) and scores another member's result 8 when it
  agrees with its own answer, 2 when it does not. The highest total wins; ties go to the
  earliest member (replangraph's rule), so three different answers keep careful's.
- Fusion (``fusion``; the judge): it writes the answer at least two candidates give;
  when all differ, it writes the answer of the candidate it would pick as a ``best`` judge.
- ReAct: the careful member's model answers every question of the goal in one reply,
  each exactly as it answers that question alone.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from replangraph.testing import ScriptedChatModel, ScriptedRequest, tool_call

from .personas import stable_hash
from .worlds import CITY_STEMS, World, city_name

MEMBERS: dict[str, float] = {"careful": 0.80, "fast": 0.55, "sloppy": 0.40}
"""Member agent types and how often each is right, in team order."""
JUDGE_RELIABILITY = 0.85
WRONG_CHOICES = 4
AGREE, DISAGREE = 8, 2
"""A voter's score for a result that agrees / disagrees with its own answer."""
COUNTRY_ENDS = ("avia", "onia", "istan", "aria", "esh", "ora", "undia", "eth")
CITIES = 250
ANSWER = re.compile(r"Answer to Q(\d+): ([A-Z][a-z]+)")
QUESTION = re.compile(r"\bQ(\d+): What is the capital of ")
SUBTASK = re.compile(r"Subtask \([^)]*\): Q(\d+):")
CANDIDATE = re.compile(r"^Candidate (\d+) \(([^)]*)\):\n(.*)$", re.MULTILINE)
JUDGE_BEST = "You judge the results"
JUDGE_FUSION = "Several agents each did"
VOTE = "You score the results"


def chance(*parts: object) -> float:
    """A stable number in [0, 1) for ``parts``."""
    return stable_hash("|".join(str(p) for p in parts)) / 16**12


def behaviour(accuracy: Mapping[str, float], judge_reliability: float) -> list[str]:
    """The model of members, judge and voters, as printed under the table."""
    members = ", ".join(f"{name} {share:.0%}" for name, share in accuracy.items())
    return [
        f"Members: {members} right; a wrong member names one of {WRONG_CHOICES} plausible wrong answers "
        "(hash of seed, question, member), so wrong members sometimes agree.",
        f"Judge (best): recognises the right candidate with probability {judge_reliability:g} when there is "
        "one; otherwise picks a candidate uniformly.",
        f"Voters (vote): self-consistency; each scores another member's result {AGREE} if it matches its own "
        f"answer, else {DISAGREE}; ties go to the earliest member.",
        "Fusion: the answer at least two candidates give; when all differ, the judge's best pick.",
        "ReAct: the careful member's model answers every question of the goal in one reply, as it would alone.",
    ]


@dataclass
class QuizWorld(World):
    """Q capital-city questions for one seed; `score` counts the right answers in a text."""

    seed: int = 0
    accuracy: dict[str, float] = field(default_factory=lambda: dict(MEMBERS))
    judge_reliability: float = JUDGE_RELIABILITY

    @classmethod
    def make(cls, questions: int, seed: int, **settings) -> QuizWorld:
        return cls(size=questions, batch=1, noun="questions", seed=seed, **settings)

    # ------------------------------------------------------------------ the quiz

    def country(self, q: int) -> str:
        i = (stable_hash(f"country|{self.seed}") + 13 * q) % (len(CITY_STEMS) * len(COUNTRY_ENDS))  # all different
        return f"{CITY_STEMS[i % len(CITY_STEMS)]}{COUNTRY_ENDS[i // len(CITY_STEMS) % len(COUNTRY_ENDS)]}"

    def question(self, q: int) -> str:
        return f"Q{q}: What is the capital of {self.country(q)}? Answer as 'Answer to Q{q}: <city>'."

    def choices(self, q: int) -> list[str]:
        """The true capital, then the wrong ones (all different)."""
        first = stable_hash(f"capital|{self.seed}|{q}") % CITIES
        return [city_name(1 + (first + 53 * k) % CITIES) for k in range(WRONG_CHOICES + 1)]

    def truth(self, q: int) -> str:
        return self.choices(q)[0]

    def answer(self, q: int, member: str) -> str:
        """What ``member`` answers to question ``q``."""
        if chance("right", self.seed, q, member) < self.accuracy[member]:
            return self.truth(q)
        return self.choices(q)[1 + stable_hash(f"wrong|{self.seed}|{q}|{member}") % WRONG_CHOICES]

    @property
    def goal(self) -> str:
        listed = "\n".join(self.question(q) for q in range(1, self.size + 1))
        return f"Answer the {self.size} quiz questions below, one subtask per question.\n{listed}"

    def names(self) -> list[str]:
        return [self.truth(q) for q in range(1, self.size + 1)]

    def answers_in(self, text: str) -> dict[int, str]:
        """``{question: answer}`` from 'Answer to Qn: City' lines (the first one of each question)."""
        found: dict[int, str] = {}
        for m in ANSWER.finditer(text):
            found.setdefault(int(m.group(1)), m.group(2))
        return found

    def score(self, answer: str) -> int:
        return sum(1 for q, a in self.answers_in(answer).items() if 1 <= q <= self.size and a == self.truth(q))

    # ------------------------------------------------------------------ reference figures

    def any_right(self) -> int:
        """Questions at least one member answers right: what a perfect judge keeps."""
        return sum(1 for q in range(1, self.size + 1) if self.truth(q) in {self.answer(q, m) for m in self.accuracy})

    # ------------------------------------------------------------------ the judge and the voters

    def pick(self, q: int, answers: Sequence[str]) -> int:
        """The 0-based candidate the ``best`` judge picks among ``answers``."""
        right = [i for i, a in enumerate(answers) if a == self.truth(q)]
        if right and chance("judge", self.seed, q) < self.judge_reliability:
            return right[0]
        return stable_hash(f"guess|{self.seed}|{q}|{len(answers)}") % len(answers)

    def fuse(self, q: int, answers: Sequence[str]) -> str:
        """The ``fusion`` judge's answer: the one at least two give, else the ``best`` pick's."""
        answer, count = Counter(answers).most_common(1)[0]
        return answer if count >= 2 else answers[self.pick(q, answers)]

    def vote_score(self, voter: str, q: int, answer: str) -> int:
        return AGREE if answer == self.answer(q, voter) else DISAGREE


# --------------------------------------------------------------------------- scripted models


def candidates_in(prompt: str, world: QuizWorld) -> tuple[int, list[str]]:
    """``(question, [answer of candidate 1, ...])`` from a judging request."""
    found = SUBTASK.search(prompt)
    if not found:
        raise ValueError("a judging request without a quiz subtask")
    q = int(found.group(1))
    return q, [world.answers_in(text).get(q, text.strip()) for _, _, text in CANDIDATE.findall(prompt)]


def member_model(world: QuizWorld, name: str) -> ScriptedChatModel:
    """Member ``name``: answers its subtask's question, scores others' results, or (ReAct) answers the goal."""

    def respond(request: ScriptedRequest) -> str:
        if VOTE in request.system:
            q, answers = candidates_in(request.prompt, world)
            scores = {n: world.vote_score(name, q, a) for n, a in enumerate(answers, 1)}
            if "Ballot" in request.tool_names:
                return tool_call("Ballot", {"scores": [{"candidate": n, "score": s} for n, s in scores.items()]})
            return json.dumps({"scores": {str(n): s for n, s in scores.items()}})
        mine = re.search(r"Your subtask \([^)]*\): Q(\d+):", request.prompt)
        questions = [int(mine.group(1))] if mine else sorted({int(n) for n in QUESTION.findall(request.prompt)})
        return "\n".join(f"Answer to Q{q}: {world.answer(q, name)}" for q in questions)

    return ScriptedChatModel(respond=respond)


def main_model(world: QuizWorld, agent_type: str) -> ScriptedChatModel:
    """The planner's model: one subtask per question, all for ``agent_type``; the judge; the finalizer,
    which lists the answers found in the results."""

    def respond(request: ScriptedRequest):
        if "Plan" in request.tool_names:
            if "replanner" in request.system:
                return tool_call("Plan", {"tasks": []})
            tasks = [
                {"id": str(q), "content": world.question(q), "agent_type": agent_type, "depends_on": []}
                for q in range(1, world.size + 1)
            ]
            return tool_call("Plan", {"tasks": tasks})
        if JUDGE_BEST in request.system:
            q, answers = candidates_in(request.prompt, world)
            n = world.pick(q, answers) + 1
            pick = {"winner": n, "reason": f"candidate {n} names the capital I trust"}
            return tool_call("Pick", pick) if "Pick" in request.tool_names else json.dumps(pick)
        if JUDGE_FUSION in request.system:
            q, answers = candidates_in(request.prompt, world)
            fused = f"Answer to Q{q}: {world.fuse(q, answers)}"
            return tool_call("Fusion", {"result": fused}) if "Fusion" in request.tool_names else fused
        if request.tool_names:  # a subtask of the default agent: none is planned
            return "No question here."
        found = world.answers_in(request.prompt)
        return "\n".join(f"Answer to Q{q}: {found[q]}" for q in sorted(found))

    return ScriptedChatModel(respond=respond)
