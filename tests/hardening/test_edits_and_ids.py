"""Frontmatter edits round-trip (item 8) and ids are literals (items 10 and 14)."""

from __future__ import annotations

import json

import pytest
import yaml

from dmm.errors import ExitCode
from dmm.memory.edit import FrontmatterEditError, set_field, with_supersedes
from dmm.memory.parse import parse_memory
from tests.conflicts.test_resolution import NEW_LIMIT, OLD_LIMIT, cid, snapshot
from tests.conftest import git

BLOCK = ("---\nid: mem_2025_06_10_001\ntags:\n- uploads\n- limits\nscope: project\n"
         "priority: 0.5\nconfidence: active\nstatus: active\nsupersedes:\n- mem_2024_01_01_001\n"
         "- \"ADR-7: old gateway rule\"\ncreated: 2025-06-10\n---\n\n# Ceiling\n\nBody.\n")


def test_block_style_lists_and_odd_entries_survive_an_edit():
    text = with_supersedes(BLOCK, ["mem_2024_01_01_001", "ADR-7: old gateway rule"],
                           ["mem_2025_01_10_001"])
    meta = yaml.safe_load(text.split("---")[1])
    assert meta["supersedes"] == ["mem_2024_01_01_001", "ADR-7: old gateway rule",
                                  "mem_2025_01_10_001"]
    assert meta["tags"] == ["uploads", "limits"]
    memory, problems = parse_memory(text, "project/ceiling.md")
    assert memory is not None and not [p for p in problems if p.severity == "error"]


@pytest.mark.parametrize("value", ["yes", "null", "a: b", "#x", "[x]", "line\nbreak", "é"])
def test_set_field_quotes_what_yaml_would_misread(value):
    text = set_field(BLOCK, "status", value)
    assert yaml.safe_load(text.split("---")[1])["status"] == value


def test_an_edit_that_would_not_read_back_is_refused():
    doubled = BLOCK.replace("status: active\n", "status: active\nstatus: active\n")
    with pytest.raises(FrontmatterEditError):
        set_field(doubled, "status", "deprecated")


def test_resolving_a_memory_with_block_style_frontmatter_keeps_it_valid(store):
    survivor = store.memory / "project" / "limit_new.md"
    text = survivor.read_text()
    head, body = text.split("---\n", 2)[1:]
    head = head.replace("tags: [uploads, limits]\n", "tags:\n- uploads\n- limits\n")
    survivor.write_text(f"---\n{head}supersedes:\n- \"ADR-7: old gateway rule\"\n---\n{body}")
    git(store.root, "commit", "-qam", "block style, as PyYAML writes it")
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    proc = store.dmm("conflicts", "resolve", conflict, "--action", "deprecate", "--target",
                     OLD_LIMIT, "--reason", "newer")
    assert proc.returncode == 0, proc.stderr
    memory, problems = parse_memory(survivor.read_text(), "project/limit_new.md")
    assert memory is not None and memory.supersedes == ["ADR-7: old gateway rule", OLD_LIMIT]
    assert store.dmm("validate").returncode == 0
    found = json.loads(store.dmm("query", "gateway upload ceiling", "--json").stdout)
    assert NEW_LIMIT in json.dumps(found)


def test_undo_takes_ids_literally(store):
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    assert store.dmm("conflicts", "resolve", conflict, "--action", "dismiss", "--reason",
                     "fine").returncode == 0
    before = snapshot(store)
    for pattern in ("conflict_.*", "conflict_[0-9a-f]*", "^Dmm"):
        proc = store.dmm("conflicts", "undo", pattern, "--reason", "r")
        assert proc.returncode == ExitCode.INVALID_INPUT, proc.stderr
        assert "not a conflict id" in proc.stderr
    proc = store.dmm("conflicts", "undo", "conflict_" + "0" * 12, "--reason", "r")
    assert proc.returncode == ExitCode.NOT_FOUND
    assert snapshot(store) == before


def test_proposal_ids_are_checked_before_they_name_a_ref(store):
    for bad in ("../../HEAD", "prop_*", "x\ny"):
        proc = store.dmm("review", "approve", bad)
        assert proc.returncode == ExitCode.INVALID_INPUT
        assert "not a proposal id" in proc.stderr


@pytest.mark.parametrize("mem_id", ['"mem_2026_01_01_001\\n"', "mem_2026_01_01_00\u0663",
                                    "mem_2026_01_01_0011", "xmem_2026_01_01_001"])
def test_ids_are_whole_ascii_matches(repo, mem_id):
    repo.write("project/a.md", "---\nid: " + mem_id + "\ntags: [a]\nscope: project\n"
               "priority: 0.5\nconfidence: active\nstatus: active\n---\n# A\n\nText.\n")
    repo.add("project/b.md", "mem_2026_01_01_001", "B")
    proc = repo.dmm("validate", "--json")
    assert proc.returncode == 1
    problems = json.loads(proc.stdout)["problems"]
    assert any(p["path"] == "project/a.md" and p["field"] == "id" for p in problems)


@pytest.mark.parametrize("args, content", [
    (["propose", "--path", "project/bad.md"], "---\ntags: [a\npriority: 0.5\n---\n# T\n\nB.\n"),
    (["propose", "--path", "project/bad.md"], "---\n- a list\n---\n# T\n\nB.\n"),
])
def test_a_proposal_whose_frontmatter_cannot_be_edited_is_a_precheck_error(store, args,
                                                                           content):
    proc = store.dmm("write", *args, "--reason", "r", "--json", input=content)
    assert proc.returncode == ExitCode.INVALID_INPUT, proc.stderr
    assert not json.loads(proc.stdout)["success"]
    assert "frontmatter" in " ".join(json.loads(proc.stdout)["precheck_errors"])


def test_deprecating_or_promoting_a_memory_with_broken_frontmatter_is_refused(store):
    old = store.memory / "project" / "node18.md"
    old.write_text(old.read_text().replace("status: active", "status: active\nstatus: active")
                   .replace("scope: project", "scope: project\nscope: project"))
    git(store.root, "commit", "-qam", "repeated fields")
    for args in (["deprecate"], ["promote", "--new-scope", "global"]):
        proc = store.dmm("write", *args, "--path", "project/node18.md", "--reason", "r",
                         "--json")
        assert proc.returncode == ExitCode.INVALID_INPUT, proc.stderr
        assert "cannot edit" in " ".join(json.loads(proc.stdout)["precheck_errors"])
