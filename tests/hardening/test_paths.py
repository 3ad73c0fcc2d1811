"""Paths given by a person, an agent or a branch (items 2, 3 and 14 of the attack report):
every odd path is refused before git sees it, and nothing is lost."""

from __future__ import annotations

import json

import pytest

from dmm.errors import ExitCode, InvalidInputError
from dmm.memory.paths import clean_memory_path
from tests.conflicts.test_resolution import NEW_LIMIT, OLD_LIMIT, cid, snapshot
from tests.conftest import git

ODD_PATHS = ["project//merged.md", "project/./m.md", "project/a/../m.md", "project/m.md/",
             "project/.git/m.md", ".git/m.md", "/abs/m.md", "project/.hidden.md", "",
             "project/x\n0 " + "0" * 40 + "\t.dmm/memory/project/other.md",
             "project/tab\there.md", "project/esc\x1b[8m.md", "project/del\x7f.md"]


@pytest.mark.parametrize("raw", ODD_PATHS)
def test_the_normaliser_refuses_every_odd_path(raw):
    with pytest.raises(InvalidInputError):
        clean_memory_path(raw)


@pytest.mark.parametrize("raw, clean", [
    ("project/api/errors.md", "project/api/errors.md"),
    (".dmm/memory/project/a.md", "project/a.md"),
    ("./project/a.md", "project/a.md"),
    ("project\\win\\a.md", "project/win/a.md"),
    ("project/ünïcödé 名前.md", "project/ünïcödé 名前.md"),
])
def test_the_normaliser_keeps_plain_paths(raw, clean):
    assert clean_memory_path(raw) == clean


@pytest.mark.parametrize("path", ODD_PATHS[:5])
def test_a_merge_with_an_odd_path_is_refused_and_changes_nothing(store, path):
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    before = snapshot(store)
    proc = store.dmm("conflicts", "resolve", conflict, "--action", "merge", "--content",
                     "# Gateway upload ceiling\n\nIt is 50 MB.\n", "--path", path,
                     "--reason", "merge")
    assert proc.returncode == ExitCode.INVALID_INPUT, proc.stderr
    assert "Traceback" not in proc.stderr
    assert snapshot(store) == before  # both originals still active, nothing committed


def test_a_newline_in_a_proposal_path_never_reaches_git(store):
    other = store.memory / "project" / "node18.md"
    smuggled = ("project/x\n0 " + "0" * 40 + "\t.dmm/memory/project/node18.md")
    blob = git(store.root, "rev-parse", "HEAD:.dmm/BOOT.md").strip()
    for path in (smuggled, f"project/y\n100644 {blob}\t.dmm/BOOT.md"):
        proc = store.dmm("write", "propose", "--path", path, "--reason", "r", "--json",
                         input="---\ntags: [a]\npriority: 0.5\nconfidence: active\n---\n# T\n")
        assert proc.returncode == ExitCode.INVALID_INPUT
        assert "control character" in " ".join(json.loads(proc.stdout)["precheck_errors"])
    assert git(store.root, "for-each-ref", "refs/heads/dmm/proposals/") == ""
    assert other.exists()


def test_a_newline_in_a_merge_path_never_reaches_git(store):
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    before = snapshot(store)
    proc = store.dmm("conflicts", "resolve", conflict, "--action", "merge", "--content", "x",
                     "--path", "project/m.md\n0 " + "0" * 40 + "\t.dmm/memory/project/node18.md",
                     "--reason", "merge", "--propose")
    assert proc.returncode == ExitCode.INVALID_INPUT
    assert snapshot(store) == before


def test_a_path_inside_dot_git_is_no_empty_proposal(store):
    proc = store.dmm("write", "propose", "--path", "project/.git/x.md", "--reason", "r",
                     "--json", input="---\ntags: [a]\npriority: 0.5\nconfidence: active\n---\n"
                                     "# T\n\nBody.\n")
    assert proc.returncode == ExitCode.INVALID_INPUT
    assert not json.loads(proc.stdout)["success"]
    assert git(store.root, "for-each-ref", "refs/heads/dmm/proposals/") == ""


def test_a_file_name_that_is_not_utf8_is_refused(store):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "dmm", "write", "propose", "--path",
                           b"project/caf\xe9.md", "--reason", "r"], cwd=store.root,
                          capture_output=True, input=b"---\ntags: [a]\n---\n# T\n")
    assert proc.returncode == ExitCode.INVALID_INPUT
    assert b"Traceback" not in proc.stderr and b"not valid UTF-8" in proc.stderr
