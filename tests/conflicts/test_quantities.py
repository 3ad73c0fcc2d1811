"""Units are normalised before values are compared."""

from __future__ import annotations

import pytest

from dmm.conflicts.quantities import quantities, same_value, versions


def one(text: str):
    found = quantities(text)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("a, b", [
    ("3600 seconds", "one hour"), ("10,485,760 bytes", "10 MiB"), ("2 weeks", "a fortnight"),
    ("90 minutes", "5400 s"), ("1 GB", "one gigabyte"), ("30 second timeout", "30000 ms"),
    ("两天", "48 hours"), ("十二小时", "720 minutes"), ("一个月", "30 days"),
])
def test_equal_amounts_in_other_units(a, b):
    qa, qb = one(a), one(b)
    assert qa.dimension == qb.dimension
    assert same_value(qa.value, qb.value)


@pytest.mark.parametrize("a, b", [("5 MB", "20,000,000 bytes"), ("15 minutes", "3600 seconds"),
                                  ("3 projects", "five projects")])
def test_different_amounts(a, b):
    qa, qb = one(a), one(b)
    assert qa.dimension == qb.dimension and not same_value(qa.value, qb.value)


def test_chinese_numerals_with_measure_words():
    assert [(q.dimension, q.value) for q in quantities("需要两位审阅者，等待第二个审批，"
                                                       "每三百五十次检查一次")] == [
        ("count:人", 2), ("count:次", 350), ("count:次", 1)]  # 第二个 is an ordinal


def test_counts_are_bound_to_their_noun():
    assert one("3 projects").dimension == "count:project"
    assert one("2 members").dimension != one("2 projects").dimension


def test_versions_are_not_counts():
    assert quantities("Python 3.9 and Node.js 22") == []
    assert [(v.name, v.version) for v in versions("Python 3.12 and PostgreSQL 16")] == [
        ("python", "3.12"), ("postgresql", "16")]


def test_articles_count_only_before_a_unit():
    assert quantities("a service and an API") == []
    assert one("an hour").value == 3600


def test_number_words_of_every_size():
    assert one("fourteen days").value == 14 * 86400
    assert one("seventeen retries").value == 17
    assert one("ein einziges Approval").value == 1  # "ein" alone needs a unit; "einziges" is 1
    assert one("sechs Wochen").dimension == "duration"


@pytest.mark.parametrize("text", [
    "a second approach",  # an ordinal, far more often than one second
    "runs at 02:00 UTC", "the 14:30 train",  # clock times are not counts
    "docker run -p 8080 -d nginx",  # a one-letter unit must touch its number
    "Double d = 0.5",
    "ask powershell-7-expert", "the python-3.11 image",  # a number inside a name
])
def test_what_is_not_a_quantity(text):
    assert quantities(text) == []


def test_one_letter_units_against_the_number():
    assert one("retries back off for 30s").value == 30
    assert one("kept for 46d").value == 46 * 86400


@pytest.mark.parametrize("a, b", [("twice a minute", "every 30 seconds"),
                                  ("3 times per hour", "20 minutes"),
                                  ("once a day", "24 hours")])
def test_a_frequency_is_the_period_between_two_events(a, b):
    qa, qb = one(a), one(b)
    assert qa.dimension == qb.dimension == "duration" and same_value(qa.value, qb.value)


def test_a_value_is_read_with_its_whole_sentence_across_wrapped_lines():
    """Memories are markdown, often wrapped at 80 columns: the words a value is said about
    may sit on the line before it. A blank line, a list item or a heading ends a sentence."""
    from dmm.conflicts.features import build
    from dmm.memory import Memory

    body = ("The OkHttp client inside `StripeGateway` waits\n30000 milliseconds for a "
            "response.\n\n- retries: 2 times\n- the pool keeps\n  5 connections")
    memory = Memory(id="mem_2025_01_01_001", path="project/a.md", title="Payment calls",
                    body=body, tags=["payments"], scope="project", priority=0.5,
                    confidence="active", status="active")
    f = build([memory])[memory.id]
    context = {q.text: c - f.title_terms for q, c in zip(f.quantities, f.contexts)}
    assert {"okhttp", "stripegateway", "respons"} <= context["30000 milliseconds"]
    assert "okhttp" not in context["2 times"] and "retri" in context["2 times"]
    assert "pool" in context["5 connections"] and "retri" not in context["5 connections"]



def test_a_run_on_text_is_read_near_each_value_and_only_its_first_values():
    """A pasted log or a list of figures without full stops is one long "sentence": each value
    is read with the words near it, and only the first values of such a dump are compared
    (reading the whole text around each of thousands of values took minutes per memory)."""
    from dmm.conflicts.features import MAX_QUANTITIES, build
    from dmm.conflicts.prose import CONTEXT_CHARS
    from dmm.memory import Memory

    body = "the upload proxy waits 30 seconds " + " ".join(
        f"node{k} keeps {k % 9 + 1} connections" for k in range(2 * MAX_QUANTITIES))
    assert len(body) > 4 * CONTEXT_CHARS
    memory = Memory(id="mem_2025_01_01_001", path="project/a.md", title="Pool figures",
                    body=body, tags=["pool"], scope="project", priority=0.5,
                    confidence="active", status="active")
    f = build([memory])[memory.id]
    assert len(f.quantities) == MAX_QUANTITIES
    first, last = f.contexts[0] - f.title_terms, f.contexts[-1] - f.title_terms
    assert {"upload", "proxi", "wait"} <= first
    assert "proxi" not in last and "connect" in last


def test_http_error_statuses_counted_are_not_seconds():
    assert quantities("Watch for high numbers of 404s and 503s after the switch.") == []
    # a glued "s" is otherwise seconds, and so is an error status with a decimal
    assert [(q.dimension, q.value) for q in quantities("timeout 30s, then 300s, then 404.5s")] \
        == [("duration", 30.0), ("duration", 300.0), ("duration", 404.5)]


def test_a_second_is_an_ordinal_whatever_its_case():
    # "A Second Approach" heads a section; "one second" alone is too often "another"
    assert quantities("A Second Approach: use the builder.") == []
    assert quantities("a second reviewer looks at it") == []
    assert [q.value for q in quantities("we wait 2 seconds, then a 3 second pause")] == [2.0, 3.0]


def test_number_words_and_scales_are_read_once():
    assert [(q.dimension, q.value, q.text) for q in quantities("5 thousand users, Five Tage")] \
        == [("count:user", 5000.0, "5 thousand users"), ("duration", 5 * 86400.0, "Five Tage")]


def test_a_stop_word_starting_a_sentence_names_no_product():
    assert [(q.dimension, q.value) for q in quantities("Every 10 minutes the job runs.")] == [
        ("duration", 600.0)]
    assert "3 replicas" in [q.text for q in quantities("The 3 replicas share one volume.")]
    assert versions("Only 2 approvals are needed.") == []
    assert [v.text for v in versions("Python 3.12 is required")] == ["Python 3.12"]
    # nor does a word that bounds the quantity after it
    assert [q.text for q in quantities("Max 3 retries, then give up.")] == ["3 retries"]


def test_a_lower_bound_on_a_version_is_read_as_one():
    def read(text):
        return [(v.version, v.or_later) for v in versions(text)]

    assert read("Requires Node.js 18.0 or later") == [("18.0", True)]
    assert read("Python 3.9+ only") == [("3.9", True)]
    assert read("at least Go 1.21 is needed") == [("1.21", True)]
    assert read("Python 3.9 to 3.12 or newer") == [("3.9", False), ("3.12", True)]
    assert read("Use Node 22 and Java 17") == [("22", False), ("17", False)]


def test_counts_in_words_of_one_group_are_one_dimension():
    [seats], [members] = quantities("three seats"), quantities("five members")
    assert seats.dimension == members.dimension and (seats.value, members.value) == (3, 5)
    assert quantities("five projects")[0].dimension != seats.dimension


@pytest.mark.parametrize("text", ["ADR 39: use PostgreSQL for the ledger",
                                  "See RFC 7231 section 4.2 before changing the handler",
                                  "Step 3 of the runbook; PEP 8 naming", "Follow § 4.2",
                                  "ADR-0012 and issue #41 explain why"])
def test_numbers_that_name_a_document_are_no_values(text):
    assert quantities(text) == [] and versions(text) == []


def test_a_value_next_to_a_document_number_is_still_a_value():
    assert [(q.dimension, q.value) for q in quantities("In step 3 wait 30 seconds")] == [
        ("duration", 30.0)]
    assert [(v.name, v.version) for v in versions("ADR 7: Python 3.11 everywhere")] == [
        ("python", "3.11")]
