"""Parsing and validation of single memory files: every problem reported, with its field."""

from __future__ import annotations

import datetime as dt

from dmm.memory.parse import parse_memory
from tests.conftest import memory_text

GOOD = memory_text("mem_2026_03_14_007", "Use four spaces for Python indentation",
                   "Python files use four spaces.\n\nRationale: PEP 8.", tags="[style, python]",
                   extra="created: 2026-03-14\nsupersedes: [mem_2025_11_02_003]\n")


def problems_of(text: str, path: str = "project/style/x.md"):
    memory, problems = parse_memory(text, path)
    return memory, {(p.field, p.severity): p.message for p in problems}


def test_valid_memory_parses_every_field():
    memory, problems = parse_memory(GOOD, "project/style/indent.md")
    assert problems == []
    assert memory.id == "mem_2026_03_14_007"
    assert memory.title == "Use four spaces for Python indentation"
    assert memory.tags == ["style", "python"]
    assert memory.created == dt.date(2026, 3, 14)
    assert memory.supersedes == ["mem_2025_11_02_003"]
    assert memory.body.startswith("# Use four spaces")
    assert memory.tokens > 10


def test_missing_frontmatter_is_one_clear_error():
    memory, problems = parse_memory("# Just a title\n\nNo frontmatter.", "project/a.md")
    assert memory is None
    assert "no YAML frontmatter" in problems[0].message


def test_malformed_yaml_names_the_line():
    text = "---\nid: mem_2026_01_01_001\ntags: [a, b\nscope: project\n---\n# T\n"
    memory, problems = parse_memory(text, "project/a.md")
    assert memory is None
    assert "malformed YAML" in problems[0].message
    assert "line" in problems[0].message


def test_frontmatter_that_is_not_a_mapping():
    memory, problems = parse_memory("---\n- a\n- b\n---\n# T\n", "project/a.md")
    assert memory is None
    assert "mapping" in problems[0].message


def test_every_missing_field_is_reported_not_just_the_first():
    memory, found = problems_of("---\ntags: [a]\n---\n# Title\n\nBody.\n")
    assert memory is None
    for name in ("id", "scope", "priority", "confidence", "status"):
        assert (name, "error") in found, name


def test_wrong_types_and_values_each_get_a_problem():
    text = ("---\nid: 42\ntags: style, python\nscope: projects\npriority: 1.5\n"
            "confidence: sure\nstatus: live\ncreated: yesterday\n---\n# T\n\nBody.\n")
    memory, found = problems_of(text)
    assert memory is None
    assert "mem_YYYY_MM_DD_NNN" in found[("id", "error")]
    assert "must be a YAML list" in found[("tags", "error")]
    assert "not one of" in found[("scope", "error")]
    assert "outside 0.0 - 1.0" in found[("priority", "error")]
    assert "not one of" in found[("confidence", "error")]
    assert "not one of" in found[("status", "error")]
    assert "not a date" in found[("created", "error")]


def test_priority_must_be_a_number_not_a_boolean():
    _, found = problems_of(GOOD.replace("priority: 0.5", "priority: true"))
    assert ("priority", "error") in found


def test_tags_limits():
    _, found = problems_of(GOOD.replace("tags: [style, python]", "tags: []"))
    assert "at least one tag" in found[("tags", "error")]
    many = "[" + ", ".join(f"t{i}" for i in range(11)) + "]"
    _, found = problems_of(GOOD.replace("tags: [style, python]", f"tags: {many}"))
    assert "at most 10" in found[("tags", "error")]


def test_unknown_field_with_a_likely_typo_gets_a_hint_but_stays_usable():
    memory, found = problems_of(GOOD.replace("priority: 0.5", "priority: 0.5\nprority: 0.9"))
    assert memory is not None
    assert "did you mean 'priority'" in found[("prority", "warning")]


def test_missing_title_is_a_warning_and_the_file_name_stands_in():
    text = GOOD.replace("# Use four spaces for Python indentation\n", "")
    memory, found = problems_of(text, "project/style/tab_width.md")
    assert memory.title == "tab width"
    assert ("title", "warning") in found


def test_bom_crlf_and_unicode_are_fine():
    text = "\ufeff" + GOOD.replace("\n", "\r\n").replace("Python files", "Python-Dateien 🐍 文件")
    memory, problems = parse_memory(text, "project/style/indent.md")
    assert [p for p in problems if p.severity == "error"] == []
    assert "🐍" in memory.body
    assert memory.title == "Use four spaces for Python indentation"


def test_dates_may_be_quoted_strings():
    memory, problems = parse_memory(GOOD.replace("created: 2026-03-14", "created: '2026-03-14'"),
                                    "project/a.md")
    assert memory.created == dt.date(2026, 3, 14)


def test_supersedes_entries_that_are_not_ids_are_warned_about():
    _, found = problems_of(GOOD.replace("[mem_2025_11_02_003]", "[old-note]"))
    assert ("supersedes", "warning") in found


def test_a_field_given_twice_is_an_error_naming_both_lines():
    # YAML readers disagree on which of two equal keys counts (PyYAML keeps the last): a
    # reviewer could read `status: active` where dmm would read `deprecated`
    text = memory_text("mem_2026_01_01_001", "A").replace(
        "status: active", "status: active\nstatus: deprecated")
    memory, problems = parse_memory(text, "project/a.md")
    assert memory is None
    assert len(problems) == 1 and problems[0].severity == "error"
    assert "'status' is given twice" in problems[0].message
    line = text.split("\n").index("status: deprecated")  # counted from the line after ---
    assert f"lines {line - 1} and {line}" in problems[0].message


def test_a_key_repeated_inside_a_flow_mapping_or_a_nested_one_is_refused_too():
    for extra in ("meta: {a: 1, a: 2}", "meta:\n  a: 1\n  a: 2"):
        text = memory_text("mem_2026_01_01_001", "A").replace("status: active",
                                                              "status: active\n" + extra)
        memory, problems = parse_memory(text, "project/a.md")
        assert memory is None and "'a' is given twice" in problems[0].message
