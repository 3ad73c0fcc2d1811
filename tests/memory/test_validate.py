"""Folder rules and store-wide rules."""

from __future__ import annotations

from dmm.memory.parse import parse_memory
from dmm.memory.validate import check_location, check_store
from tests.conftest import memory_text


def test_scope_must_match_its_folder():
    memory, problems = parse_memory(memory_text("mem_2026_01_01_001", "T", scope="global"),
                                    "project/x.md")
    assert memory is None
    assert any("does not match its folder 'project/'" in p.message for p in problems)


def test_files_outside_scope_folders_are_errors():
    assert "scope folder" in check_location("loose.md", "project", "active")[0].message
    assert "not a scope folder" in check_location("misc/x.md", "project", "active")[0].message


def test_deprecated_folder_rules():
    assert check_location("deprecated/x.md", "project", "deprecated") == []
    warn = check_location("deprecated/x.md", "project", "active")[0]
    assert warn.severity == "warning"
    warn = check_location("project/x.md", "project", "deprecated")[0]
    assert warn.severity == "warning" and "belong in deprecated/" in warn.message


def test_duplicate_ids_are_reported_on_every_file_involved():
    a, _ = parse_memory(memory_text("mem_2026_01_01_001", "A"), "project/a.md")
    b, _ = parse_memory(memory_text("mem_2026_01_01_001", "B"), "project/b.md")
    c, _ = parse_memory(memory_text("mem_2026_01_01_002", "C"), "project/c.md")
    problems = check_store([a, b, c])
    assert sorted(p.path for p in problems) == ["project/a.md", "project/b.md"]
    assert all("duplicate id mem_2026_01_01_001" in p.message for p in problems)
