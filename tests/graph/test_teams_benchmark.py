"""The teams benchmark at a tiny size: accuracy comes from the answers the merges kept, calls from the meter."""

from __future__ import annotations

import io
from collections import Counter

import pytest

from benchmarks import team_table
from benchmarks.__main__ import BENCHMARKS
from benchmarks.team_world import AGREE, DISAGREE, MEMBERS, QuizWorld, main_model, member_model

QUESTIONS, SEEDS = 8, (0, 1)
FIRST = team_table.FIRST


@pytest.fixture(scope="module")
def perfect_judge() -> team_table.Results:
    return team_table.run_all(QUESTIONS, SEEDS, judge_reliability=1.0)


def worlds(judge_reliability: float = 1.0) -> list[QuizWorld]:
    return [QuizWorld.make(QUESTIONS, seed, judge_reliability=judge_reliability) for seed in SEEDS]


def answers(world: QuizWorld, q: int) -> list[str]:
    return [world.answer(q, member) for member in MEMBERS]


def right(world: QuizWorld, decide) -> int:
    """Questions where ``decide(world, q) -> answer`` is the truth."""
    return sum(1 for q in range(1, world.size + 1) if decide(world, q) == world.truth(q))


def voted(world: QuizWorld, q: int) -> str:
    """The vote worked out by hand: each member scores the others by agreement; ties to the earliest."""
    given = answers(world, q)
    totals = [
        sum(AGREE if mine == theirs else DISAGREE for v, mine in enumerate(given) if v != i)
        for i, theirs in enumerate(given)
    ]
    return given[max(range(len(given)), key=lambda i: (totals[i], -i))]


def fused(world: QuizWorld, q: int) -> str:
    """Fusion by hand, with a perfect judge: the answer two members share, else the right one if any."""
    answer, count = Counter(answers(world, q)).most_common(1)[0]
    if count >= 2:
        return answer
    return world.truth(q) if world.truth(q) in answers(world, q) else "a wrong answer"  # the perfect judge's pick


def recovered(results: team_table.Results, label: str) -> list[int]:
    return [o.recovered for o in results.row(label).outcomes]


def test_teams_is_registered():
    assert BENCHMARKS["teams"] == "benchmarks.team_table"


def test_single_members_score_their_own_answers(perfect_judge):
    for member in MEMBERS:
        expected = [right(w, lambda w, q, m=member: w.answer(q, m)) for w in worlds()]
        assert recovered(perfect_judge, f"{member} alone") == expected
    assert recovered(perfect_judge, team_table.REACT) == recovered(perfect_judge, "careful alone")


def test_a_perfect_judge_keeps_every_question_some_member_got_right(perfect_judge):
    assert recovered(perfect_judge, "team, best") == [w.any_right() for w in worlds()]
    assert perfect_judge.ceiling == [w.any_right() / QUESTIONS for w in worlds()]
    # The seeds are chosen so the team really differs from its best member.
    assert sum(recovered(perfect_judge, "team, best")) > sum(recovered(perfect_judge, "careful alone"))


def test_vote_and_fusion_keep_the_answers_worked_out_by_hand(perfect_judge):
    assert recovered(perfect_judge, "team, vote") == [right(w, voted) for w in worlds()]
    assert recovered(perfect_judge, "team, fusion") == [right(w, fused) for w in worlds()]


def test_without_a_judge_the_first_member_is_kept(perfect_judge):
    assert recovered(perfect_judge, FIRST) == recovered(perfect_judge, "careful alone")


def test_calls_are_counted_and_teams_cost_more(perfect_judge):
    def calls(label: str) -> list[int]:
        return perfect_judge.row(label).calls()

    singles = [r for r in perfect_judge.rows if r.single]
    teams = [r for r in perfect_judge.rows if r.label.startswith("team")]
    assert all(o.calls > 0 and o.prompt_tokens > 0 and o.error is None for r in perfect_judge.rows for o in r.outcomes)
    assert min(min(r.calls()) for r in teams) > max(max(r.calls()) for r in singles)
    labels = ("careful alone", FIRST, "team, best", "team, vote", "team, fusion")
    for alone, first, best, vote, fusion in zip(*(calls(label) for label in labels), strict=True):
        assert first == alone + 2 * QUESTIONS  # two more members per question
        assert best == fusion == first + QUESTIONS  # one judge call per question
        assert vote == first + 3 * QUESTIONS  # each member votes once per question
    assert perfect_judge.best_single().label == "careful alone"


def test_an_unreliable_judge_counts_and_cost_do_not_depend_on_concurrency():
    one = team_table.run_all(4, [3], judge_reliability=0.5, concurrency=1)
    three = team_table.run_all(4, [3], judge_reliability=0.5, concurrency=3)
    for a, b in zip(one.rows, three.rows, strict=True):
        assert [(o.recovered, o.calls, o.prompt_tokens) for o in a.outcomes] == [
            (o.recovered, o.calls, o.prompt_tokens) for o in b.outcomes
        ]


def test_members_are_right_about_as_often_as_stated():
    world = QuizWorld.make(2_000, 7)
    for member, share in MEMBERS.items():
        assert abs(right(world, lambda w, q, m=member: w.answer(q, m)) / 2_000 - share) < 0.03
    agreeing = sum(1 for q in range(1, 2_001) if (a := answers(world, q))[1] == a[2] != world.truth(q))
    assert 0 < agreeing < 2_000 * 0.45 * 0.6 / 2  # wrong members sometimes agree: about a quarter of the time


def test_models_answer_from_the_request_not_the_call_order():
    world = QuizWorld.make(5, 0)
    careful = member_model(world, "careful")
    prompt = f"Overall goal: {world.goal}\n\nYour subtask (3): {world.question(3)}"
    first = careful.invoke(prompt).text
    careful.invoke(f"Your subtask (1): {world.question(1)}")
    assert careful.invoke(prompt).text == first == f"Answer to Q3: {world.answer(3, 'careful')}"
    finalizer = main_model(world, "careful")
    assert world.answers_in(finalizer.invoke("Answer to Q2: Ashford\nAnswer to Q1: Belport").text) == {
        1: "Belport",
        2: "Ashford",
    }


def test_main_prints_the_table_and_the_model():
    out = io.StringIO()
    assert team_table.main(["--questions", "3", "--seeds", "1"], out=out) == 0
    text = out.getvalue()
    assert text.startswith("Machine: ") and "| agent | accuracy | model calls |" in text
    for label in ("careful alone", "sloppy alone", team_table.REACT, "team, best", "team, vote", "team, fusion", FIRST):
        assert f"| {label} |" in text
    assert "Judge (best): recognises the right candidate with probability 0.85" in text
    assert "relative to careful alone" in text
