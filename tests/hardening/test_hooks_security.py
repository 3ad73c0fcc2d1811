"""Git hooks (items 1, 11 and 12): they run the installed dmm and never code from the work tree,
survive the pre-commit framework's renaming, and never change tracked files."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

from dmm.hooks import install
from tests.conftest import git, run_dmm


def _hooks_dir(repo) -> Path:
    path = Path(git(repo.root, "rev-parse", "--git-path", "hooks").strip())
    return path if path.is_absolute() else repo.root / path


def _commit(root: Path, message: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "commit", "-qm", message], cwd=root, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def test_a_branch_carrying_a_dmm_package_is_never_run_by_the_hooks(store, tmp_path):
    assert store.dmm("hooks", "install").returncode == 0
    marker = tmp_path / "pwned"
    git(store.root, "checkout", "-q", "-b", "evil")
    pkg = store.root / "dmm"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (pkg / "__main__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    store.add("project/evil.md", "mem_2026_04_01_001", "A harmless looking memory")
    git(store.root, "add", "-A")
    _commit(store.root, "evil branch")
    git(store.root, "checkout", "-q", "main")
    (store.root / "unrelated.txt").write_text("x\n")
    git(store.root, "add", "unrelated.txt")
    _commit(store.root, "main moves on")
    merge = subprocess.run(["git", "merge", "-q", "--no-edit", "evil"], cwd=store.root,
                           capture_output=True, text=True, timeout=120)
    assert merge.returncode == 0, merge.stderr
    assert not marker.exists(), "the hook ran code from the repository"
    # (asked from outside the work tree: `python -m dmm` run there would import the evil copy)
    scans = json.loads(store.dmm("-C", str(store.root), "conflicts", "stats", "--json",
                                 cwd=tmp_path).stdout)["recent_scans"]
    assert scans, "the hook did not run the installed dmm at all"


def test_the_shim_names_no_interpreter_and_falls_back_to_dmm_on_path(repo, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setattr(install, "dmm_command", lambda: "/nonexistent/venv/bin/dmm")
    text = install.render("post-commit")
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "python" not in code and "-m dmm" not in code
    hooks = _hooks_dir(repo)
    hooks.mkdir(parents=True, exist_ok=True)
    (hooks / "post-commit").write_text(text)
    (hooks / "post-commit").chmod(0o755)
    bin_dir, marker = tmp_path / "bin", tmp_path / "path-dmm-ran"
    bin_dir.mkdir()
    (bin_dir / "dmm").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (bin_dir / "dmm").chmod(0o755)
    # a `dmm` inside the work tree is never taken, even with "." on PATH
    planted = repo.root / "dmm"
    planted.write_text(f"#!/bin/sh\ntouch {tmp_path / 'planted-ran'}\n")
    planted.chmod(0o755)
    repo.add("project/a.md", "mem_2026_04_01_002", "A memory")
    git(repo.root, "add", "-A")
    env = {"PATH": f".{os.pathsep}{os.environ['PATH']}"}
    proc = _commit(repo.root, "with dot on PATH", env)
    assert proc.returncode == 0
    assert not (tmp_path / "planted-ran").exists()
    assert "not installed on PATH" in proc.stderr
    repo.add("project/b.md", "mem_2026_04_01_003", "Another memory")
    git(repo.root, "add", "-A")
    proc = _commit(repo.root, "teammate", {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert proc.returncode == 0 and marker.exists()


def test_the_pre_commit_framework_renaming_does_not_make_the_shim_recurse(repo):
    assert repo.dmm("hooks", "install").returncode == 0
    hooks = _hooks_dir(repo)
    for name in install.HOOKS:  # what `pre-commit install` does to an existing hook
        os.replace(hooks / name, hooks / f"{name}.legacy")
        (hooks / name).write_text(f'#!/bin/sh\n# pre-commit framework\n'
                                  f'"$(dirname "$0")/{name}.legacy" "$@"\n')
        (hooks / name).chmod(0o755)
    repo.add("project/old.md", "mem_2025_01_01_001", "Old rule", "Use the old tool.")
    repo.add("project/new.md", "mem_2025_06_01_001", "New rule", "Use the new tool.",
             extra="supersedes: [mem_2025_01_01_001]\n")
    git(repo.root, "add", "-A")
    proc = _commit(repo.root, "memories")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("new memory conflict") == 1
    states = json.loads(repo.dmm("hooks", "status", "--json").stdout)["hooks"]
    assert {h["state"] for h in states} == {"installed"}
    assert repo.dmm("hooks", "install").returncode == 0  # again: refreshes, does not refuse


def test_init_never_changes_a_tracked_hooks_folder(git_repo):
    hooks = git_repo / ".githooks"
    hooks.mkdir()
    (hooks / "post-commit").write_text("#!/bin/sh\necho team hook\n")
    (hooks / "post-commit").chmod(0o755)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "team hooks")
    git(git_repo, "config", "core.hooksPath", ".githooks")
    before = {p.name: p.read_bytes() for p in hooks.iterdir()}
    proc = run_dmm("init", cwd=git_repo)
    assert proc.returncode == 0, proc.stderr
    assert {p.name: p.read_bytes() for p in hooks.iterdir()} == before
    assert "dmm hooks run post-commit" in proc.stderr  # what to add instead
    proc = run_dmm("hooks", "install", cwd=git_repo)
    assert proc.returncode != 0 and "tracks" in proc.stderr
    assert {p.name: p.read_bytes() for p in hooks.iterdir()} == before


def _shim(repo, dmm_path: str) -> None:
    """The post-commit shim as `dmm hooks install` writes it for a dmm at ``dmm_path``."""
    text = install.render("post-commit").replace(install.dmm_command(), shlex.quote(dmm_path))
    hooks = _hooks_dir(repo)
    hooks.mkdir(parents=True, exist_ok=True)
    (hooks / "post-commit").write_text(text)
    (hooks / "post-commit").chmod(0o755)


def test_the_shim_runs_a_dmm_installed_under_a_path_with_a_space(repo, tmp_path):
    folder = tmp_path / "My Tools" / "bin"
    folder.mkdir(parents=True)
    marker = tmp_path / "ran"
    (folder / "dmm").write_text(f'#!/bin/sh\necho "$@" > {marker}\n')
    (folder / "dmm").chmod(0o755)
    _shim(repo, str(folder / "dmm"))
    repo.add("project/a.md", "mem_2026_04_01_004", "A memory")
    git(repo.root, "add", "-A")
    proc = _commit(repo.root, "spaces")
    assert proc.returncode == 0 and marker.read_text().strip() == "hooks run post-commit", \
        proc.stderr


def test_a_path_entry_reaching_the_work_tree_through_a_link_is_refused(repo, tmp_path):
    planted = repo.root / "tools"
    planted.mkdir()
    (planted / "dmm").write_text(f"#!/bin/sh\ntouch {tmp_path / 'planted-ran'}\n")
    (planted / "dmm").chmod(0o755)
    (tmp_path / "innocent").symlink_to(planted)  # looks like a folder outside the work tree
    _shim(repo, "/nonexistent/venv/bin/dmm")
    repo.add("project/a.md", "mem_2026_04_01_005", "A memory")
    git(repo.root, "add", "-A")
    proc = _commit(repo.root, "linked", {"PATH": f"{tmp_path / 'innocent'}{os.pathsep}"
                                                 f"{os.environ['PATH']}"})
    assert proc.returncode == 0
    assert not (tmp_path / "planted-ran").exists()
    assert "not installed on PATH" in proc.stderr
