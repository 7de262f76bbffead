"""Item ranges in instructions (replangraph.queue.scopes): reading them on realistic texts, and the range
arithmetic's properties (union, subtract, fresh_work, gaps, batched_plan) on generated ones."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replangraph.queue import scopes
from replangraph.queue.scopes import (
    Scope,
    batched_plan,
    fresh_work,
    gaps,
    same_list,
    scope_of,
    subtract,
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


def test_a_plan_batches_two_tasks_by_the_number_in_which_they_differ():
    def batched(first: str, second: str) -> list[str]:
        plan = [{"id": "1", "content": first}, {"id": "2", "content": second}]
        return [t["content"] for t in batched_plan(plan, 10)[0]]

    assert batched(
        "Extract the product ranked 7 from the top 100 ranking.",
        "Extract the product ranked 8 from the top 100 ranking.",
    ) == ["Extract the product ranked 7-8 from the top 100 ranking."]
    assert batched("Look up city 12", "Look up city 13") == ["Look up city 12-13"]
    for unlike in [
        ("Look up city 12", "Look up city 12"),  # no difference
        ("Look up city 12", "Look up town 13"),  # other words
        ("Look up city 12 of 250", "Look up city 13 of 200"),  # two numbers differ
        ("Look up cities 1-4", "Look up cities 1-5"),  # ranges are not items
        ("Write the report", "Write the report"),
    ]:
        assert batched(*unlike) == list(unlike)


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


# --- fresh_work ------------------------------------------------------------------------------------------------


def test_fresh_work_drops_what_a_running_sibling_does():
    taken = [("t2", CATALOG.format("51-100")), ("t3", "Write the report.")]
    work = fresh_work(
        ["Extract products 51 to 100", "Extract products ranked 80-120", "Write the report"],
        within=None,
        taken=taken,
    )
    assert work.queued == ["Extract products ranked 101-120"]
    assert work.dropped_or_trimmed == 3 == len(work.notes)
    assert "task t2" in work.notes[0] and "dropped" in work.notes[0]
    assert "trimmed to 101-120" in work.notes[1] and "task t2" in work.notes[1]
    assert "repeats task t3" in work.notes[2]


def test_fresh_work_keeps_a_checks_follow_ups_inside_the_checked_scope():
    within = CATALOG.format("1-50")
    work = fresh_work(
        [CATALOG.format("41-60"), "Extract products 51-100", REVIEWS.format("1-10"), "Write the report."],
        within=within,
        taken=[("t1", within), ("t0", CATALOG.format("1-100"))],  # itself and its parent: not repeats
    )
    assert work.queued == [CATALOG.format("41-50"), REVIEWS.format("1-10"), "Write the report."]
    assert "outside the scope" in work.notes[0] and "outside the scope" in work.notes[1]
    assert work.dropped_or_trimmed == 2


def test_fresh_work_splits_around_taken_pieces_and_earlier_follow_ups():
    within = CATALOG.format("1-200")
    work = fresh_work(
        ["Extract products 1-20", CATALOG.format("1-100"), CATALOG.format("1-100") + "  ", within.upper()],
        within=within,
        taken=[("t5", "Extract products 40-60")],
    )
    assert work.queued == ["Extract products 1-20", CATALOG.format("21-39"), CATALOG.format("61-100")]
    assert "trimmed to 21-39, 61-100" in work.notes[0]
    assert "follow-up 1" in work.notes[0] and "task t5" in work.notes[0]
    assert "repeats follow-up 2" in work.notes[1]
    assert "repeats the subtask itself" in work.notes[2]


def test_fresh_work_exact_repeats_ignore_case_whitespace_and_closing_punctuation():
    work = fresh_work(
        ["write  the REPORT!", "Write the report", "Note Python 3.10-3.12 support", "Compare rainfall."],
        within=None,
        taken=[("t9", "Write the report.")],
    )
    assert work.queued == ["Note Python 3.10-3.12 support", "Compare rainfall."]
    assert [note.split(": ")[-1] for note in work.notes] == ["it repeats task t9.", "it repeats task t9."]


def test_fresh_work_with_nothing_to_do_queues_everything_unchanged():
    contents = [CATALOG.format("1-10"), CITIES.format("1-4"), "Write the report."]
    assert fresh_work(contents, within=None, taken=[]).queued == contents
    assert fresh_work(contents, within=None, taken=[]).notes == []
    assert fresh_work([], within=CATALOG.format("1-10"), taken=[("a", "x")]).queued == []


def test_fresh_work_parses_each_text_once(monkeypatch):
    calls = []
    real = scopes.scope_of
    monkeypatch.setattr(scopes, "scope_of", lambda text: calls.append(text) or real(text))
    taken = [(f"t{i}", CATALOG.format(f"{i * 10 + 1}-{i * 10 + 10}")) for i in range(5000)]
    follow_ups = [CATALOG.format(f"{i}-{i + 30}") for i in range(1, 60_000, 300)]
    work = fresh_work(follow_ups, within=None, taken=taken)
    assert len(calls) == len(taken) + len(follow_ups)
    assert work.queued == [t for t in follow_ups if span(t)[0] > 50_000]  # taken covers 1-50,000


@st.composite
def follow_up_cases(draw):
    """A subtask (or none), taken work and follow-ups, on the generated lists, with some exact repeats."""

    def text():
        name = draw(st.sampled_from(list(LISTS)))
        first = draw(st.integers(1, 60))
        last = first + draw(st.integers(0, 30))
        separator = draw(st.sampled_from(SEPARATORS))
        return name, draw(st.sampled_from(LISTS[name])).format(f"{first}{separator}{last}")

    within = text() if draw(st.booleans()) else None
    taken = [(f"t{i}", *text()) for i in range(draw(st.integers(0, 6)))]
    pool = [t for _, _, t in taken] + ([within[1]] if within else [])
    follow_ups = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["scoped", "scoped", "scoped", "unscoped", "repeat"]))
        if kind == "repeat" and (pool or follow_ups):
            copied = draw(st.sampled_from(pool + follow_ups))
            follow_ups.append(draw(st.sampled_from([copied, copied.upper(), copied.rstrip(".") + " !"])))
        elif kind == "unscoped":
            follow_ups.append(draw(st.sampled_from(UNSCOPED)))
        else:
            follow_ups.append(text()[1])
    return within, taken, follow_ups


def list_name(text: str) -> str | None:
    """The generated list an instruction is on (each list's phrasings are `same_list`: tested above)."""
    scope = scope_of(text)
    return next((n for n, ts in LISTS.items() if scope and same_list(scope, scope_of(ts[0].format("1-2")))), None)


def plain(text: str) -> str:
    """What an exact repeat ignores: case, whitespace and closing punctuation."""
    return " ".join(text.lower().split()).rstrip(" .!?;:,")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(follow_up_cases())
def test_fresh_work_repeats_no_taken_work_and_loses_none(case):
    within, taken, follow_ups = case
    own = span(within[1]) if within else None
    ignored = {  # the subtask itself and what it continues: taken scopes holding its whole range
        task_id
        for task_id, name, text in taken
        if within and name == within[0] and span(text)[0] <= own[0] and own[1] <= span(text)[1]
    }
    covered = {name: set() for name in LISTS}
    for task_id, name, text in taken:
        if task_id not in ignored:
            covered[name] |= items([span(text)])
    work = fresh_work(follow_ups, within=within[1] if within else None, taken=[(i, t) for i, _, t in taken])

    queued = {name: set() for name in LISTS}
    for text in work.queued:
        assert text in follow_ups or scope_of(text) is not None
        name = list_name(text)
        if name is None:
            continue
        got = items([span(text)])
        assert not got & covered[name], "queued work that taken work on the same list covers"
        assert not got & queued[name], "queued overlapping follow-ups"
        if within and name == within[0]:
            assert got <= items([own]), "queued work outside the subtask's scope"
        queued[name] |= got

    repeated_own = {plain(within[1]), *(plain(t) for i, _, t in taken if i in ignored)} if within else set()
    for text in follow_ups:
        name = list_name(text)
        if name is None or plain(text) in repeated_own:
            continue
        wanted = items([span(text)]) & (items([own]) if within and name == within[0] else items([span(text)]))
        assert wanted <= queued[name] | covered[name], "a follow-up's work was lost"

    seen, unscoped = {plain(t) for _, _, t in taken} | ({plain(within[1])} if within else set()), []
    for text in follow_ups:
        if plain(text) not in seen and scope_of(text) is None:
            unscoped.append(text)
        seen.add(plain(text))
    assert [t for t in work.queued if scope_of(t) is None] == unscoped
    assert work.dropped_or_trimmed == len(work.notes) <= len(follow_ups)


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
    assert got <= rest and not got & items(own)
    assert got | items(own) >= rest


# --- batched_plan ----------------------------------------------------------------------------------------------

PRODUCT = "Extract the product ranked {} from the top 100 bestseller ranking."
CITY = "Look up city {}"


def test_a_plan_of_one_task_per_product_is_batched():
    plan = [{"id": "open", "content": "Open the store's site", "agent_type": "web", "depends_on": []}]
    plan += [
        {"id": str(i), "content": PRODUCT.format(i), "agent_type": "web", "depends_on": ["open"]} for i in range(1, 101)
    ]
    plan += [{"id": "report", "content": "Write the report", "agent_type": "default", "depends_on": ["50", "51"]}]
    batched, notes = batched_plan(plan, 50)
    assert [t["content"] for t in batched] == [
        "Open the store's site",
        PRODUCT.format("1-50"),
        PRODUCT.format("51-100"),
        "Write the report",
    ]
    assert [t["id"] for t in batched] == ["open", "1", "51", "report"]
    assert batched[1]["depends_on"] == batched[2]["depends_on"] == ["open"]
    assert batched[3]["depends_on"] == ["1", "51"]
    assert notes == ["tasks 1 to 100 (100, one item each) were batched into 2 tasks of at most 50 items"]
    assert plan[-1]["depends_on"] == ["50", "51"]  # the input is not changed


def test_scattered_items_are_written_as_a_list():
    plan = [{"id": f"c{n}", "content": CITY.format(n), "depends_on": []} for n in (9, 3, 7, 4, 12)]
    batched, _ = batched_plan(plan, 10)
    assert [(t["id"], t["content"]) for t in batched] == [("c9", "Look up city 3-4, 7, 9, 12")]


def test_runs_break_at_other_agents_tools_dependencies_and_repeats():
    def task(i, n, **extra):
        return {"id": f"t{i}", "content": CITY.format(n), "depends_on": [], **extra}

    plan = [task(0, 1), task(1, 2), task(2, 3, agent_type="web"), task(3, 4, agent_type="web", required_tools=["x"])]
    plan += [task(4, 5, depends_on=["t0"]), task(5, 6, depends_on=["t4"]), task(6, 7), task(7, 7), task(8, 8)]
    batched, notes = batched_plan(plan, 5)
    assert [t["content"] for t in batched] == [
        "Look up city 1-2",
        CITY.format(3),
        CITY.format(4),
        CITY.format(5),
        CITY.format(6),
        CITY.format(7),
        "Look up city 7-8",
    ]
    assert batched[3]["depends_on"] == ["t0"] and len(notes) == 2


def test_a_repeated_item_ends_a_run():
    plan = [{"id": f"t{i}", "content": CITY.format(n), "depends_on": []} for i, n in enumerate([1, 2, 2, 3])]
    batched, _ = batched_plan(plan, 10)
    assert [(t["id"], t["content"]) for t in batched] == [("t0", "Look up city 1-2"), ("t2", "Look up city 2-3")]


@pytest.mark.parametrize("batch_size", [1, 5])
def test_plans_without_item_runs_are_returned_as_they_were(batch_size):
    plan = [
        {"id": "a", "content": "Search the store", "agent_type": "web", "depends_on": []},
        {"id": "b", "content": "Extract products 1-50", "depends_on": ["a"]},
        {"id": "c", "content": "Extract products 51-100", "depends_on": ["a"]},
        {"id": "d", "content": "Write the report in 3 parts", "depends_on": ["b", "c"], "required_tools": ["w"]},
    ]
    assert batched_plan(plan, batch_size) == (plan, [])
    many = [{"id": str(n), "content": CITY.format(n), "depends_on": []} for n in range(5)]
    assert batched_plan(many, 1) == (many, [])
    with pytest.raises(ValueError):
        batched_plan(many, 0)


@st.composite
def item_plans(draw):
    """Plans of item tasks (one item number each, unique per template) among other tasks, with dependencies."""
    numbers = {template: iter(draw(st.permutations(range(1, 40)))) for template in (PRODUCT, CITY)}
    plan, origin = [], {}
    for i in range(draw(st.integers(1, 30))):
        template = draw(st.sampled_from([PRODUCT, PRODUCT, CITY, None]))
        if template is None:
            content = draw(st.sampled_from(["Open the site", "Write the report", "Compare the numbers"])) + f" #{i}x"
        else:
            n = next(numbers[template])
            content = template.format(n)
            origin[(template, n)] = f"t{i}"
        task = {"id": f"t{i}", "content": content, "agent_type": draw(st.sampled_from(["web", "web", "default"]))}
        task["depends_on"] = draw(st.sampled_from([[], [], ["t0"] if i else []]))
        if i > 1 and draw(st.integers(0, 5)) == 0:
            task["depends_on"] = [f"t{draw(st.integers(0, i - 1))}"]
        plan.append(task)
    return plan, origin


def held_items(content: str) -> list[tuple[str, int]]:
    """The (template, item) pairs a plan task is about: item tasks and their batches."""
    for template in (PRODUCT, CITY):
        before, after = template.split("{}")
        if content.startswith(before) and content.endswith(after) and content[len(before)].isdigit():
            written = content[len(before) : len(content) - len(after)]
            return [
                (template, n)
                for piece in written.split(", ")
                for n in items([tuple(map(int, piece.split("-")))] if "-" in piece else [(int(piece), int(piece))])
            ]
    return []


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(item_plans(), st.integers(1, 7))
def test_batched_plan_properties(case, batch_size):
    plan, origin = case
    batched, notes = batched_plan(plan, batch_size)
    ids = [t["id"] for t in batched]
    assert len(set(ids)) == len(ids) and set(ids) <= {t["id"] for t in plan}
    holder = {}
    for task in batched:
        held = held_items(task["content"])
        assert len(held) <= batch_size
        members = [origin[pair] for pair in held] or [task["id"]]
        assert task["id"] in members  # a batch takes the id of one of its tasks
        for member in members:
            assert member not in holder, "an item in two tasks"
            holder[member] = task["id"]
    assert set(holder) == {t["id"] for t in plan}, "an item lost"
    by_id = {t["id"]: t for t in plan}
    for task in batched:
        members = [m for m, h in holder.items() if h == task["id"]]
        assert {by_id[m]["agent_type"] for m in members} == {task["agent_type"]}
        assert set(task["depends_on"]) == {holder[d] for m in members for d in by_id[m]["depends_on"]}
        assert task["id"] not in task["depends_on"]
    assert [t["content"] for t in batched if not held_items(t["content"])] == [
        t["content"] for t in plan if not held_items(t["content"])
    ]
    assert (len(notes) == 0) == (batched == plan)
