"""The hints a new user meets (issue 37 item 22): each says something true and useful, in one
error style, and a typo gets the nearest names."""

from __future__ import annotations

import pytest

from dmm.errors import ExitCode
from dmm.scaffold import init
from dmm.workspace import Workspace
from tests.conftest import Repo, git


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Repo:
    root = tmp_path_factory.mktemp("hints") / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Test User")
    git(root, "config", "user.email", "test@example.com")
    init(Workspace(root))
    (root / ".dmm/memory/baseline/dmm_usage.md").unlink()
    repo = Repo(root)
    repo.add("project/api/errors.md", "mem_2026_01_01_001", "Errors are RFC 9457 documents")
    repo.add("project/jobs/queue.md", "mem_2026_01_01_002", "Jobs go to the queue")
    repo.write("project/broken.md", "---\ntags: [x]\n---\n\n# No id\n\nText.\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "store")
    return repo


def test_an_unknown_id_points_at_the_list_and_a_typo_at_the_nearest_names(store):
    unknown = store.dmm("show", "mem_1999_09_09_999")
    assert unknown.returncode == ExitCode.NOT_FOUND
    assert "dmm status" not in unknown.stderr and "dmm list" in unknown.stderr
    typo = store.dmm("show", "project/api/eror.md")
    assert typo.returncode == ExitCode.NOT_FOUND
    assert "did you mean project/api/errors.md?" in typo.stderr
    folder = store.dmm("validate", "project/job")
    assert folder.returncode == ExitCode.NOT_FOUND and "did you mean project/jobs?" in folder.stderr


def test_list_under_a_folder_that_does_not_exist_fails_as_validate_does(store):
    proc = store.dmm("list", "--under", "project/nope")
    assert proc.returncode == ExitCode.NOT_FOUND == store.dmm("validate", "project/nope").returncode
    assert "project/nope" in proc.stderr
    assert store.dmm("list", "--under", "project/jobs").returncode == 0


def test_usage_errors_speak_as_every_other_error(store):
    proc = store.dmm("write", "update", "--memory", "mem_2026_01_01_001")
    assert proc.returncode == ExitCode.USAGE
    assert proc.stderr.startswith("error: Missing option '--reason'"), proc.stderr
    assert "hint: `dmm write update --help`" in proc.stderr
    assert "Usage:" not in proc.stderr and "Error:" not in proc.stderr


def test_a_missing_id_says_what_an_id_looks_like(store):
    proc = store.dmm("validate", "project/broken.md")
    assert proc.returncode == ExitCode.PROBLEMS_FOUND
    line = next(x for x in proc.stdout.splitlines() if "'id' is missing" in x)
    assert "mem_YYYY_MM_DD_NNN" in line


def test_a_local_change_in_the_way_is_named_without_gits_own_error_text(repo):
    repo.add("project/db.md", "mem_2026_01_01_001", "Migrations are Alembic migrations")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "store")
    text = (repo.memory / "project/db.md").read_text()
    made = repo.dmm("write", "update", "--memory", "project/db.md", "--reason", "r",
                    "--content", text.replace("Alembic migrations", "Alembic revisions"))
    pid = made.stdout.strip()
    assert made.returncode == 0 and pid, made.stderr
    (repo.memory / "project/db.md").write_text(text + "\nlocal edit\n")
    proc = repo.dmm("review", "approve", pid, "--yes")
    assert proc.returncode == ExitCode.INVALID_INPUT
    assert proc.stderr.count("error") == 1, proc.stderr  # dmm's, not git's inside it
    assert "in the way" in proc.stderr and ".dmm/memory/project/db.md" in proc.stderr
