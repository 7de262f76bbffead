"""Item ranges in instructions (replangraph.policy.scopes): reading them on realistic texts, and the range
arithmetic's properties (union, subtract, overlap_notes, gaps, grouped_plan) on generated ones."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replangraph.policy import scopes
from replangraph.policy.scopes import (
    GROUP_OPENING,
    Scope,
    gaps,
    group_text,
    grouped_plan,
    overlap_notes,
    same_list,
    scope_of,
    subtract,
    touching,
    union,
)

CATALOG = "Extract products ranked {} from the bestseller ranking: name, units sold and rating."
CITIES = "Look up the climate figures of survey cities {}."
REVIEWS = "Summarize the reviews of products {}"
# Phrasings of one list each (every pair of one list is `same_list`, no pair of two lists is).
LISTS = {
    "catalog": [CATALOG, "Extract products {}", "extract  products ranked {} from the bestseller ranking"],
    "cities": [CITIES, "Look up climate figures of cities {}"],
    "reviews": [REVIEWS],
}
UNSCOPED = ["Write the report.", "Compare the yearly rainfall of the cities.", "Note Python 3.10-3.12 support."]
SEPARATORS = ["-", " to ", "–", " - ", " through "]


def items(ranges) -> set[int]:
    return {n for first, last in ranges for n in range(first, last + 1)}


def span(text: str) -> tuple[int, int]:
    scope = scope_of(text)
    assert scope is not None, text
    return scope.span


# --- reading ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        (CATALOG.format("51-100"), (51, 100)),
        (CITIES.format("5-8"), (5, 8)),
        ("Extract products 51-100", (51, 100)),
        ("products 51 to 100", (51, 100)),
        ("Extract products 51–100 (en dash)", (51, 100)),
        ("Extract products 51 - 100", (51, 100)),
        ("Extract products 51 through 100.", (51, 100)),
        ("Extract the products from 51 to 100", (51, 100)),
        ("items 1,001-2,000", (1001, 2000)),
        ("Extract products ranked 1-1,000", (1, 1000)),
        ("Look up city 7-7", (7, 7)),
        ("Extract products 1-50, 5 per call", (1, 50)),
        ("Extract products 41-50 of the top 100", (41, 50)),
    ],
)
def test_scope_of_reads_the_phrasings_models_write(text, expected):
    assert span(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Write the report.",
        "Extract the top 100 products",
        "Note Python 3.10-3.12 support",  # a version
        "Scale the dose from 3.5-4.0 mg",  # decimals
        "Summarize the news of 2024-01-15",  # a date
        "Meet at 10:30-11:00",
        "Prices of $5-10",
        "A 10-20% rise",
        "Extract products 100-51",  # backwards
        "Look up cities 1, 2, 5-8",  # a list with a range in it
        "Look up cities 5-8 and 10",
        "Look up cities 5-8, 10, 12.",
        "Compare products 1-10 with products 11-20",  # two ranges
        "Extract products ranked 51st to 100th",  # ordinals are not read
        "Look up cities between 5 and 8",
        "Build v1-2 and B12-14",
    ],
)
def test_scope_of_leaves_non_ranges_alone(text):
    assert scope_of(text) is None


def test_scope_of_reads_some_count_ranges_too_as_documented():
    assert span("Write a 500-1000 word essay") == (500, 1000)
    assert not same_list(scope_of("Write a 500-1000 word essay"), scope_of("Extract products 1-50"))


def test_a_scope_writes_other_ranges_as_the_original_wrote_its_range():
    scope = scope_of(CATALOG.format("51-100"))
    assert scope.text(101, 150) == CATALOG.format("101-150")
    assert scope.text(7, 7) == CATALOG.format("7-7")
    assert scope.template == CATALOG.format("{range}")
    assert scope_of("products 51 to 100").text(1, 2) == "products 1 to 2"
    assert scope_of("items 1,001-2,000").text(2001, 3000) == "items 2,001-3,000"
    assert scope_of("items 1001-2000").text(2001, 3000) == "items 2001-3000"


@given(st.sampled_from([t for ts in LISTS.values() for t in ts]), st.sampled_from(SEPARATORS), st.integers(1, 5000))
def test_what_a_scope_writes_reads_back_as_the_same_scope(template, separator, first):
    scope = scope_of(template.format(f"{first}{separator}{first + 10}"))
    for a, b in [(first, first), (1, 1_000), (first + 3, first + 3000)]:
        again = scope_of(scope.text(a, b))
        assert again == Scope(scope.before, a, b, scope.after, scope.separator, scope.commas)
        assert same_list(again, scope)


def test_a_plan_groups_two_tasks_by_the_number_in_which_they_differ_and_keeps_their_words():
    def grouped(first: str, second: str) -> list[str]:
        plan = [{"id": "1", "content": first}, {"id": "2", "content": second}]
        return [t["content"] for t in grouped_plan(plan, 10)[0]]

    alike = [
        "Extract the product ranked 7 from the top 100 ranking.",
        "Extract the product ranked 8 from the top 100 ranking.",
    ]
    assert grouped(*alike) == [group_text(alike)]
    assert group_text(alike).splitlines() == [GROUP_OPENING.format(count=2), *(f"- {t}" for t in alike)]
    assert grouped("Look up city 12", "Look up city 13") == [group_text(["Look up city 12", "Look up city 13"])]
    for unlike in [
        ("Look up city 12", "Look up city 12"),  # no difference
        ("Look up city 12", "Look up town 13"),  # other words
        ("Look up city 12 of 250", "Look up city 13 of 200"),  # two numbers differ
        ("Look up cities 1-4", "Look up cities 1-5"),  # ranges are not items
        ("Write the report", "Write the report"),
    ]:
        assert grouped(*unlike) == list(unlike)


# --- lists -----------------------------------------------------------------------------------------------------


def test_same_list_compares_content_words():
    full, short = scope_of(CATALOG.format("51-100")), scope_of("Extract products 1-50")
    assert same_list(full, short) and same_list(short, full)
    assert same_list(full, scope_of("Extract the product 1-50"))  # plural folded, stop word left out
    assert not same_list(full, scope_of(REVIEWS.format("1-50")))
    assert not same_list(full, scope_of(CITIES.format("1-4")))
    assert not same_list(full, scope_of("products 1-50"))  # a one-word subset is too little
    assert same_list(scope_of("products 1-5"), scope_of("Products 3 to 8."))  # equal words
    assert not same_list(scope_of("1-5"), scope_of("3-8"))  # no words at all
    assert not same_list(scope_of("Summarize pages 1-10 of chapter 3"), scope_of("Summarize pages 1-10 of chapter 4"))


@pytest.mark.parametrize("name", list(LISTS))
def test_the_generated_lists_are_lists(name):
    ours = [scope_of(t.format("1-5")) for t in LISTS[name]]
    theirs = [scope_of(t.format("1-5")) for other, ts in LISTS.items() if other != name for t in ts]
    assert all(same_list(a, b) for a in ours for b in ours)
    assert not any(same_list(a, b) for a in ours for b in theirs)


# --- union and subtract ----------------------------------------------------------------------------------------

ranges = st.lists(st.tuples(st.integers(1, 80), st.integers(0, 25)).map(lambda r: (r[0], r[0] + r[1])), max_size=8)


def test_union_and_subtract_examples():
    assert union([(6, 9), (1, 5)]) == [(1, 9)]
    assert union([(1, 3), (5, 9), (2, 4)]) == [(1, 9)]
    assert union([(1, 3), (5, 9)]) == [(1, 3), (5, 9)]
    assert union([]) == []
    assert subtract([(1, 100)], [(40, 60)]) == [(1, 39), (61, 100)]
    assert subtract([(1, 10), (20, 30)], [(5, 25)]) == [(1, 4), (26, 30)]
    assert subtract([(1, 10)], [(1, 10)]) == []
    assert subtract([(1, 10)], []) == [(1, 10)]


@given(ranges)
def test_union_is_sorted_disjoint_and_idempotent(rs):
    merged = union(rs)
    assert items(merged) == items(rs)
    assert union(merged) == merged
    assert all(a <= b for a, b in merged)
    assert all(merged[i][1] + 1 < merged[i + 1][0] for i in range(len(merged) - 1))  # apart, not touching


@given(ranges, ranges)
def test_subtract_keeps_exactly_what_taken_does_not_cover(rs, taken):
    left = subtract(rs, taken)
    assert items(left) == items(rs) - items(taken)
    assert items(left) | (items(rs) & items(taken)) == items(rs)
    assert union(left) == left


# --- overlap_notes ---------------------------------------------------------------------------------------------


def test_overlap_notes_name_the_work_a_follow_up_meets_and_drop_nothing():
    taken = [("t2", CATALOG.format("51-100")), ("t3", "Write the report.")]
    follow_ups = [
        "Extract products 51 to 100",
        "Extract products ranked 80-120",
        "Write the report",
        REVIEWS.format("1-9"),
    ]
    notes = overlap_notes(follow_ups, within=None, taken=taken)
    assert len(notes) == 2 and all("queued as written" in n for n in notes)
    assert "51 to 100 also in task t2" in notes[0] and "80-100 also in task t2" in notes[1]


def test_overlap_notes_say_when_a_follow_up_reaches_outside_the_subtask():
    within = CATALOG.format("1-50")
    notes = overlap_notes(
        [CATALOG.format("41-60"), REVIEWS.format("1-10"), "Write the report."],
        within=within,
        taken=[("t1", within), ("t0", CATALOG.format("1-100"))],  # itself and its parent: not overlaps
    )
    assert len(notes) == 1 and "reaches outside" in notes[0] and "also in" not in notes[0]


def test_numbers_that_are_prices_or_pages_are_only_ever_noted():
    within = "List every product priced from 25 to 100 dollars."
    follow_ups = [
        "List every product priced from 25 to 100 dollars.",
        "List every product priced from 100 to 200 dollars.",
    ]
    notes = overlap_notes(
        follow_ups, within=within, taken=[("b", "List every product priced from 100 to 200 dollars.")]
    )
    assert all("queued as written" in n for n in notes)
    assert gaps("Extract every product on pages 1-15 of the catalog", ["Extract products 41-90 of the catalog"]) == []


def test_overlap_notes_parse_each_text_once(monkeypatch):
    calls = []
    real = scopes.scope_of
    monkeypatch.setattr(scopes, "scope_of", lambda text: calls.append(text) or real(text))
    taken = [(f"t{i}", CATALOG.format(f"{i * 10 + 1}-{i * 10 + 10}")) for i in range(5000)]
    follow_ups = [CATALOG.format(f"{i}-{i + 30}") for i in range(1, 60_000, 300)]
    notes = overlap_notes(follow_ups, within=None, taken=taken)
    assert len(calls) == len(taken) + len(follow_ups)
    assert len(notes) == sum(span(t)[0] <= 50_000 for t in follow_ups)  # taken covers 1-50,000


def list_name(text: str) -> str | None:
    """The generated list an instruction is on (each list's phrasings are `same_list`: tested above)."""
    scope = scope_of(text)
    return next((n for n, ts in LISTS.items() if scope and same_list(scope, scope_of(ts[0].format("1-2")))), None)


@st.composite
def follow_up_cases(draw):
    """Taken work and follow-ups on the generated lists."""

    def text():
        name = draw(st.sampled_from(list(LISTS)))
        first = draw(st.integers(1, 60))
        last = first + draw(st.integers(0, 30))
        return name, draw(st.sampled_from(LISTS[name])).format(f"{first}{draw(st.sampled_from(SEPARATORS))}{last}")

    taken = [(f"t{i}", *text()) for i in range(draw(st.integers(0, 6)))]
    follow_ups = [
        text()[1] if draw(st.booleans()) else draw(st.sampled_from(UNSCOPED)) for _ in range(draw(st.integers(0, 8)))
    ]
    return taken, follow_ups


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(follow_up_cases())
def test_a_follow_up_is_noted_exactly_when_its_items_meet_taken_work(case):
    taken, follow_ups = case
    notes = overlap_notes(follow_ups, within=None, taken=[(i, t) for i, _, t in taken])
    meets = [
        text
        for text in follow_ups
        if (name := list_name(text)) is not None
        and any(n == name and items([span(text)]) & items([span(t)]) for _, n, t in taken)
    ]
    assert len(notes) == len(meets)


# --- gaps ------------------------------------------------------------------------------------------------------


def test_gaps_of_a_hand_off():
    within = CATALOG.format("1-100")
    follow_ups = [CATALOG.format("41-60"), "Extract products 70 to 80", REVIEWS.format("90-100")]
    assert gaps(within, follow_ups) == [CATALOG.format("61-69"), CATALOG.format("81-100")]
    assert gaps(within, [CATALOG.format("41-100")]) == []
    assert gaps(within, [REVIEWS.format("41-60"), "Write the report."]) == []  # none on its list
    assert gaps("Write the report.", [CATALOG.format("41-60")]) == []  # no scope
    assert gaps(CITIES.format("1-8"), ["Look up climate figures of cities 5-6"]) == [CITIES.format("7-8")]


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 50),
    st.integers(0, 60),
    st.lists(st.tuples(st.booleans(), st.integers(-10, 120), st.integers(0, 40)), max_size=6),
)
def test_gaps_and_follow_ups_cover_the_rest_of_the_range(first, size, drawn):
    within = CATALOG.format(f"{first}-{first + size}")
    follow_ups = [(CATALOG if same else REVIEWS).format(f"{max(a, 1)}-{max(a, 1) + n}") for same, a, n in drawn]
    found = gaps(within, follow_ups)
    own = [span(text) for text, (same, _, _) in zip(follow_ups, drawn, strict=True) if same]
    if not own or min(a for a, _ in own) > first + size:
        assert found == []
        return
    rest = items([(max(first, min(a for a, _ in own)), first + size)])
    got = items(map(span, found))
    assert all(same_list(scope_of(g), scope_of(within)) for g in found)
    bounds = {a for a, _ in own} | {b for _, b in own} if touching(own) else set()
    assert got <= rest and not (got & items(own)) - bounds  # touching follow-ups: a gap reaches their bounds
    assert got | items(own) >= rest


PRICES = "List every product priced from {} to {} dollars"


def test_a_gap_between_touching_bands_reaches_from_bound_to_bound():
    """Bands that share bounds are a scale, not items: the band a hand-off skipped is queued whole, so the products
    priced between two whole dollars at its edges ($200.50, $299.99) are not lost."""
    within = PRICES.format(0, "1,000")
    handed = [PRICES.format(0, 100), PRICES.format(100, 200), PRICES.format(300, 400), PRICES.format(400, "1,000")]
    assert gaps(within, handed) == [PRICES.format(200, 300)]
    assert gaps(within, [PRICES.format(0, 100), PRICES.format(100, 900)]) == [PRICES.format(900, "1,000")]
    # items numbered one by one never touch: the gap holds only what no follow-up covers
    assert gaps(CATALOG.format("1-100"), [CATALOG.format("1-40"), CATALOG.format("61-100")]) == [
        CATALOG.format("41-60")
    ]


# --- grouped_plan ----------------------------------------------------------------------------------------------

PRODUCT = "Extract the product ranked {} from the top 100 bestseller ranking."
CITY = "Look up city {}"


def test_a_plan_of_one_task_per_product_is_grouped_and_keeps_every_instruction():
    plan = [{"id": "open", "content": "Open the store's site", "agent_type": "web", "depends_on": []}]
    plan += [
        {"id": str(i), "content": PRODUCT.format(i), "agent_type": "web", "depends_on": ["open"]} for i in range(1, 101)
    ]
    plan += [{"id": "report", "content": "Write the report", "agent_type": "default", "depends_on": ["50", "51"]}]
    grouped, notes = grouped_plan(plan, 50)
    assert [t["content"] for t in grouped] == [
        "Open the store's site",
        group_text([PRODUCT.format(i) for i in range(1, 51)]),
        group_text([PRODUCT.format(i) for i in range(51, 101)]),
        "Write the report",
    ]
    assert [t["id"] for t in grouped] == ["open", "1", "51", "report"]
    assert grouped[1]["metadata"]["members"] == [str(i) for i in range(1, 51)]
    assert grouped[1]["depends_on"] == grouped[2]["depends_on"] == ["open"]
    assert grouped[3]["depends_on"] == ["1", "51"]
    assert notes == [
        "tasks 1 to 100 (100, one item each) run as 2 groups of at most 50, each keeping its members' instructions"
    ]
    assert plan[-1]["depends_on"] == ["50", "51"]  # the input is not changed


@pytest.mark.parametrize("min_groups", [1, 4, 8, 32])
def test_a_parallel_plan_keeps_at_least_max_concurrency_groups(min_groups):
    plan = [{"id": str(i), "content": f"Answer question {i}.", "depends_on": []} for i in range(32)]
    grouped, _ = grouped_plan(plan, 50, min_groups=min_groups)
    assert len(grouped) == min(32, max(min_groups, 1))
    listed = [line[2:] for t in grouped for line in t["content"].splitlines() if line.startswith("- ")]
    assert (listed or [t["content"] for t in grouped]) == [t["content"] for t in plan]


def test_scattered_items_keep_their_plan_order():
    plan = [{"id": f"c{n}", "content": CITY.format(n), "depends_on": []} for n in (9, 3, 7, 4, 12)]
    grouped, _ = grouped_plan(plan, 10)
    assert [(t["id"], t["content"]) for t in grouped] == [
        ("c9", group_text([CITY.format(n) for n in (9, 3, 7, 4, 12)]))
    ]


def test_runs_break_at_other_agents_tools_dependencies_and_repeats():
    def task(i, n, **extra):
        return {"id": f"t{i}", "content": CITY.format(n), "depends_on": [], **extra}

    plan = [task(0, 1), task(1, 2), task(2, 3, agent_type="web"), task(3, 4, agent_type="web", required_tools=["x"])]
    plan += [task(4, 5, depends_on=["t0"]), task(5, 6, depends_on=["t4"]), task(6, 7), task(7, 7), task(8, 8)]
    grouped, notes = grouped_plan(plan, 5)
    assert [t["content"] for t in grouped] == [
        group_text([CITY.format(1), CITY.format(2)]),
        CITY.format(3),
        CITY.format(4),
        CITY.format(5),
        CITY.format(6),
        CITY.format(7),
        group_text([CITY.format(7), CITY.format(8)]),
    ]
    assert grouped[3]["depends_on"] == ["t0"] and len(notes) == 2


@pytest.mark.parametrize("batch_size", [1, 5])
def test_plans_without_item_runs_are_returned_as_they_were(batch_size):
    plan = [
        {"id": "a", "content": "Search the store", "agent_type": "web", "depends_on": []},
        {"id": "b", "content": "Extract products 1-50", "depends_on": ["a"]},
        {"id": "c", "content": "Extract products 51-100", "depends_on": ["a"]},
        {"id": "d", "content": "Write the report in 3 parts", "depends_on": ["b", "c"], "required_tools": ["w"]},
    ]
    assert grouped_plan(plan, batch_size) == (plan, [])
    many = [{"id": str(n), "content": CITY.format(n), "depends_on": []} for n in range(5)]
    assert grouped_plan(many, 1) == (many, [])
    with pytest.raises(ValueError):
        grouped_plan(many, 0)


@st.composite
def item_plans(draw):
    """Plans of item tasks (one item number each, unique per template) among other tasks, with dependencies."""
    numbers = {template: iter(draw(st.permutations(range(1, 40)))) for template in (PRODUCT, CITY)}
    plan = []
    for i in range(draw(st.integers(1, 30))):
        template = draw(st.sampled_from([PRODUCT, PRODUCT, CITY, None]))
        if template is None:
            content = draw(st.sampled_from(["Open the site", "Write the report", "Compare the numbers"])) + f" #{i}x"
        else:
            content = template.format(next(numbers[template]))
        task = {"id": f"t{i}", "content": content, "agent_type": draw(st.sampled_from(["web", "web", "default"]))}
        task["depends_on"] = draw(st.sampled_from([[], [], ["t0"] if i else []]))
        if i > 1 and draw(st.integers(0, 5)) == 0:
            task["depends_on"] = [f"t{draw(st.integers(0, i - 1))}"]
        plan.append(task)
    return plan


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(item_plans(), st.integers(1, 7), st.integers(1, 6))
def test_grouped_plan_properties(plan, batch_size, min_groups):
    grouped, notes = grouped_plan(plan, batch_size, min_groups=min_groups)
    ids = [t["id"] for t in grouped]
    assert len(set(ids)) == len(ids) and set(ids) <= {t["id"] for t in plan}
    by_id = {t["id"]: t for t in plan}
    holder = {}
    for task in grouped:
        members = (task.get("metadata") or {}).get("members") or [task["id"]]
        assert len(members) <= batch_size and task["id"] == members[0]
        if len(members) > 1:  # every member's own words, in plan order
            assert task["content"] == group_text([by_id[m]["content"] for m in members])
        else:
            assert task["content"] == by_id[task["id"]]["content"]
        for member in members:
            assert member not in holder, "a task in two groups"
            holder[member] = task["id"]
    assert set(holder) == set(by_id), "a task lost"
    for task in grouped:
        members = [m for m, h in holder.items() if h == task["id"]]
        assert {by_id[m]["agent_type"] for m in members} == {task["agent_type"]}
        assert set(task["depends_on"]) == {holder[d] for m in members for d in by_id[m]["depends_on"]}
        assert task["id"] not in task["depends_on"]
    assert (len(notes) == 0) == (grouped == plan)
