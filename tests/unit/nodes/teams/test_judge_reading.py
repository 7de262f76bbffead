"""Reading the judges' answers (best, vote, fusion) and required_tools names in the shapes real models send."""

from __future__ import annotations

import pytest

from replangraph.llm.formats import name_list
from replangraph.llm.reading import UnreadableInput
from replangraph.nodes.teams.reading import read_choice, read_fusion, read_scores

NAMES = ["careful", "fast", "thorough"]
SAME = ["default", "default", "default"]


# --------------------------------------------------------------------------- best: read_choice


@pytest.mark.parametrize(
    ("answer", "index"),
    [
        # JSON, under the usual keys and loosely matched ones
        ('```json\n{"winner": 2}\n```', 1),
        ('{"winner": "2", "reason": "x"}', 1),
        ('{"winner": 2.0}', 1),
        ('{"winner": [2]}', 1),
        ('{"winner": "candidate_2"}', 1),
        ('{"winner": "Candidate #2 (fast)"}', 1),
        ('{"best_candidate": 2, "reason": "complete"}', 1),
        ('{"winner_id": 2}', 1),
        ('{"winnerId": 3}', 2),
        ('{"selected_candidate": 3}', 2),
        ('{"chosen": 1}', 0),
        ('{"chosen": "fast"}', 1),
        ('{"winner": {"candidate": 2, "agent_type": "fast"}}', 1),
        ('{"ranking": [3, 1, 2]}', 2),
        ('{"verdict": "I choose the third one"}', 2),
        ('{"task_id": "1", "best": "fast"}', 1),
        ('{"reason": "candidate 3 is the most complete"}', 2),
        ("2", 1),
        ('"fast"', 1),
        # prose: a choosing word decides, the last one when several
        ("Candidate 1 misses the date; candidate 2 has everything. Winner: candidate 2.", 1),
        ("Result 1 is incomplete. The best is result 3.", 2),
        ("Comparing candidate 1 and candidate 3, I pick candidate 3.", 2),
        ("**Winner: Candidate 2 (fast)**", 1),
        ("I choose fast.", 1),
        ("**Fast** is the best.", 1),
        ("Both are close, but careful forgot the units, so fast is better.", 1),
        ("Candidate 2 is better than candidate 1.", 1),
        ("I pick candidate 2 over candidate 1.", 1),
        ("I would not pick candidate 1. Winner: candidate 2.", 1),
        ("The best would be candidate 1 if it had the date, but I pick candidate 2.", 1),
        ("The best response is Candidate 2. Candidate 1 is the best formatted but lacks the date.", 1),
        ("After checking 3 sources, the winner is candidate 2.", 1),
        ("1. careful misses the units\n2. fast is complete\nWinner: 2", 1),
        ("Candidate 2 wins.", 1),
        ("Winner: 2", 1),
        ("I'd go with the second.", 1),
        # prose: a first line that is only a candidate, or the only candidate named
        ("Fast. Careful forgot the units.", 1),
        ("2 - it has the date", 1),
        ("Candidate #2", 1),
        ("candidate_2", 1),
        ("The second candidate is best.", 1),
        ("The third one.", 2),
        ("Candidate two", 1),
        # reasoning is skipped
        ("<think>candidate 1 looks wrong, candidate 3 is close</think>\nCandidate 2", 1),
        ("<thinking>Winner: candidate 1?</thinking>\n\nWinner: candidate 3", 2),
        ("so candidate 1 is out</think>\nCandidate 3", 2),
    ],
)
def test_a_judges_pick_is_read_in_the_usual_shapes(answer, index):
    assert read_choice(answer, NAMES)[0] == index


def test_a_pick_keeps_the_judges_reason():
    assert read_choice('```json\n{"winner": "2", "reason": "complete"}\n```', NAMES) == (1, "complete")
    assert read_choice('{"winner": 1, "reasoning": "it has the date"}', NAMES) == (0, "it has the date")
    assert read_choice("Winner: candidate 2.", NAMES) == (1, "Winner: candidate 2.")


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("", "empty"),
        ("<think>candidate 2 looks right, but", "only reasoning"),
        ("Nothing here is good.", "names no candidate"),
        ('{"winner": 4}', "candidate 4 does not exist"),
        ("Candidate 4 is the best.", "candidate 4 does not exist"),
        ('{"winner": [2, 3]}', "answer with one number"),
        ("Candidate 1 misses the date. Candidate 3 has the wrong year.", "names candidates 1 and 3 without saying"),
        ("1. careful misses the units\n2. fast is complete\n3. thorough is wrong", "without saying which wins"),
    ],
)
def test_a_pick_that_names_no_single_candidate_is_refused_with_what_to_do(answer, error):
    with pytest.raises(UnreadableInput, match=error):
        read_choice(answer, NAMES)


@pytest.mark.parametrize("answer", ["default", "I pick default.", '{"winner": "default"}'])
def test_an_agent_type_that_several_candidates_have_asks_for_the_number(answer):
    with pytest.raises(UnreadableInput, match="agent type of candidates 1, 2 and 3; answer with the candidate number"):
        read_choice(answer, SAME)


@pytest.mark.parametrize(
    ("answer", "index"),
    [('{"winner": 3}', 2), ("Winner: Candidate 2 (default)", 1), ("Candidate 3 (default) is best", 2)],
)
def test_candidates_with_the_same_agent_type_are_picked_by_number(answer, index):
    assert read_choice(answer, SAME)[0] == index


def test_an_agent_type_that_one_candidate_has_still_names_it():
    assert read_choice("fast", ["default", "default", "fast"])[0] == 2


# --------------------------------------------------------------------------- vote: read_scores


@pytest.mark.parametrize(
    ("answer", "scores"),
    [
        ('{"scores": {"1": 7, "2": 4}}', {0: 7, 1: 4}),
        ('{"1": 7, "2": 4}', {0: 7, 1: 4}),
        ("[3, 8]", {0: 3, 1: 8}),
        ('{"scores": [7, 9]}', {0: 7, 1: 9}),
        ('[{"id": 1, "score": 7}, {"id": 2, "score": 3}]', {0: 7, 1: 3}),
        ('[{"candidate": "Candidate 1", "rating": 7}, {"candidate": "Candidate 2", "rating": 3}]', {0: 7, 1: 3}),
        ('{"1": {"score": 8, "reason": "good"}, "2": {"score": 6, "reason": "meh"}}', {0: 8, 1: 6}),
        ('{"careful": {"score": 8}, "fast": {"score": 5}}', {0: 8, 1: 5}),
        ('{"1": {"rating": 7}, "2": {"points": 3}}', {0: 7, 1: 3}),
        ('{"candidate": 1, "score": 8}', {0: 8}),
        ('{"scores": {"1": "7/10", "2": "9/10"}}', {0: 7, 1: 9}),
        ("Candidate 1 (careful): **8**/10\nCandidate 2 (fast): **6**/10", {0: 8, 1: 6}),
        ("1. careful — 8\n2. fast — 6", {0: 8, 1: 6}),
        ("1. careful – 8\n2. fast – 6", {0: 8, 1: 6}),
        ("- **Candidate 1**: 8\n- **Candidate 2**: 6", {0: 8, 1: 6}),
        ("Candidate 1: 8 out of 10\nCandidate 2: 6 out of 10", {0: 8, 1: 6}),
        ("Score for candidate 1: 7\nScore for candidate 2: 9", {0: 7, 1: 9}),
        ("Candidate 1: 7.5\nCandidate 2 - 9", {0: 7.5, 1: 9}),
        ("- Candidate 2 (fast): 6\n- careful = 4", {1: 6, 0: 4}),
        ("| Candidate | Score |\n|---|---|\n| 1 | 7 |\n| 2 | 9 |", {0: 7, 1: 9}),
        (
            "| # | Agent | Score | Notes |\n|---|---|---|---|\n| 1 | careful | 8/10 | 3 src |\n| 2 | fast | 6 | ok |",
            {0: 8, 1: 6},
        ),
        ("<think>Candidate 1: 2</think>Candidate 1: 9\nCandidate 2: 3", {0: 9, 1: 3}),
        # other scales, rescaled to 0-10
        ('{"1": 85, "2": 70}', {0: 8.5, 1: 7}),
        ('{"scores": {"1": 40, "2": 95}}', {0: 4, 1: 9.5}),
        ("Candidate 1: 85/100\nCandidate 2: 70/100", {0: 8.5, 1: 7}),
        ("Candidate 1: 85 out of 100\nCandidate 2: 7/10", {0: 8.5, 1: 7}),
        ('{"1": "4/5", "2": "3 out of 5"}', {0: 8, 1: 6}),
        ('{"1": "85%", "2": 6}', {0: 8.5, 1: 6}),
        ('{"1": {"score": 80, "max": 100}, "2": 9}', {0: 8, 1: 9}),
        ('{"1": 15, "2": 12}', {0: 1.5, 1: 1.2}),
        ('{"1": 0.7, "2": 0.9}', {0: 7, 1: 9}),
        # a stray score above 10 on a 0-10 ballot is clamped
        ('{"scores": [{"candidate": 1, "score": 7}, {"candidate": 2, "score": "12"}]}', {0: 7, 1: 10}),
    ],
)
def test_a_ballot_is_read_in_the_usual_shapes_and_scales(answer, scores):
    assert read_scores(answer, NAMES[:2]) == pytest.approx(scores)


def test_a_ballot_of_members_with_the_same_agent_type_is_read_by_number():
    assert read_scores("1. default — 8\n2. default — 6", SAME[:2]) == {0: 8, 1: 6}
    with pytest.raises(UnreadableInput, match="no score"):
        read_scores('{"default": 8}', SAME[:2])


@pytest.mark.parametrize("answer", ["They are both good.", "", "<think>Candidate 1: 8"])
def test_a_ballot_without_scores_is_refused(answer):
    with pytest.raises(UnreadableInput, match="no score"):
        read_scores(answer, NAMES[:2])


# --------------------------------------------------------------------------- fusion: read_fusion


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ("The combined list: a, b, c.", "The combined list: a, b, c."),
        ('{"result": "combined"}', "combined"),
        ('```json\n{"combined_result": "X"}\n```', "X"),
        ('{"fused": "X"}', "X"),
        ('{"final_answer": "X"}', "X"),
        ('{"merged": "X"}', "X"),
        ('{"merged_text": "X", "notes": "n"}', "X"),
        ('{"answer": ["a", "b"]}', "a\nb"),
        ("```\ncombined text\n```", "combined text"),
        ("```markdown\n# Title\nbody\n```", "# Title\nbody"),
        ("Here is the combined answer:\n\nX", "X"),
        ("<think>merge them</think>\nFinal text", "Final text"),
        ("```python\nprint(1)\n```", "```python\nprint(1)\n```"),
        ("```\na\n```\nand\n```\nb\n```", "```\na\n```\nand\n```\nb\n```"),
        ("Plain answer with {braces}", "Plain answer with {braces}"),
    ],
)
def test_a_fusion_is_read_in_the_usual_shapes(answer, text):
    assert read_fusion(answer) == text


@pytest.mark.parametrize("answer", ["", "  ", "<think>still thinking"])
def test_an_empty_fusion_is_refused(answer):
    with pytest.raises(UnreadableInput, match="empty"):
        read_fusion(answer)


# --------------------------------------------------------------------------- required_tools: name_list


@pytest.mark.parametrize(
    ("value", "names"),
    [
        (["search-and-replace"], ["search-and-replace"]),
        ("search-and-replace", ["search-and-replace"]),
        (["find and replace"], ["find and replace"]),
        (["brave-web-search", "read-and-summarize"], ["brave-web-search", "read-and-summarize"]),
        ('["read_file, and more", "web_search"]', ["read_file, and more", "web_search"]),
        ("read_file and web_search", ["read_file", "web_search"]),
        ("`fetch_page` and `web_search`", ["fetch_page", "web_search"]),
        ("web_search, fetch_page", ["web_search", "fetch_page"]),
        ([{"type": "function", "function": {"name": "fetch_page"}}], ["fetch_page"]),
        ([{"tool": "fetch_page"}, {"tool_name": "web_search"}], ["fetch_page", "web_search"]),
        ({"name": "fetch_page"}, ["fetch_page"]),
        ({"fetch_page": True, "web_search": True, "read_file": False}, ["fetch_page", "web_search"]),
        ("functions.fetch_page", ["fetch_page"]),
        ("fetch_page()", ["fetch_page"]),
    ],
)
def test_tool_names_are_split_only_where_a_model_joined_them(value, names):
    assert name_list(value) == names
