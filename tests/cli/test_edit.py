"""`dmm edit` never loses an edit: without a terminal it asks for --reason before opening the
editor, and when no proposal is made from what was saved, the text is kept and the place said."""

from __future__ import annotations

import sys

import pytest

from dmm.errors import ExitCode
from tests.conftest import git


@pytest.fixture
def edited_store(repo, tmp_path):
    repo.add("project/queue.md", "mem_2026_01_01_001", "Jobs go to the queue",
             "Background jobs are queued in Beanstalkd, because it was there first.")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "store")
    editor = tmp_path / "editor.py"
    opened = tmp_path / "opened"
    editor.write_text(f"import sys\nopen({str(opened)!r}, 'w')\np = sys.argv[1]\n"
                      "text = open(p).read()\nopen(p, 'w')"
                      ".write(text.replace('Beanstalkd,', 'Beanstalkd 1.12,'))\n")
    return repo, {"EDITOR": f"{sys.executable} {editor}"}, opened


def test_no_terminal_and_no_reason_is_refused_before_the_editor_opens(edited_store):
    repo, env, opened = edited_store
    proc = repo.dmm("edit", "mem_2026_01_01_001", env=env)
    assert not opened.exists()
    assert proc.returncode == ExitCode.INVALID_INPUT
    assert "--reason is required" in proc.stderr and "nothing was opened" in proc.stderr


def test_an_edit_that_is_not_proposed_is_kept_and_the_place_said(edited_store):
    repo, env, opened = edited_store
    # a reason the precheck refuses (a path taken makes no difference here: an empty reason)
    proc = repo.dmm("edit", "mem_2026_01_01_001", "--reason", " ", env=env)
    assert opened.exists()
    assert proc.returncode != 0, proc.stderr
    kept = repo.root / ".git" / "dmm" / "edits" / "mem_2026_01_01_001.md"
    assert f"kept in {kept}" in proc.stderr
    assert "Beanstalkd 1.12," in kept.read_text()
    again = repo.dmm("write", "update", "--memory", "mem_2026_01_01_001", "--file", str(kept),
                     "--reason", "version")
    assert again.returncode == 0, again.stderr
