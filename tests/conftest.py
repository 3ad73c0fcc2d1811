"""Shared fixtures: real temporary git repositories with dmm initialised, and helpers that
write memory files and run the real `dmm` command line in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dmm.scaffold import init
from dmm.workspace import Workspace

# as git's own test suite does: no test waits in a pager on a pseudo-terminal (the tests of the
# pager set $PAGER themselves)
os.environ["PAGER"] = "cat"
os.environ.pop("DMM_PAGER", None)

# The semantic layer starts a background process per repository and loads a model: the tests
# of tests/semantic/ turn it on where they test it (env {"DMM_SEMANTIC": "on"}); everywhere else
# the commands answer by words, as they do on a machine without the model.
os.environ["DMM_SEMANTIC"] = "off"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def memory_text(mem_id: str, title: str, body: str = "", *, scope: str = "project",
                tags: str = "[testing]", priority: float = 0.5, confidence: str = "active",
                status: str = "active", extra: str = "") -> str:
    body = body or f"{title}. This memory exists for a test and says why it matters."
    return (f"---\nid: {mem_id}\ntags: {tags}\nscope: {scope}\npriority: {priority}\n"
            f"confidence: {confidence}\nstatus: {status}\n{extra}---\n\n# {title}\n\n"
            f"{textwrap.dedent(body).strip()}\n")


class Repo:
    """A temporary git repository with .dmm/ initialised (no starter memory)."""

    def __init__(self, root: Path):
        self.root = root
        self.memory = root / ".dmm" / "memory"

    def write(self, rel: str, text: str | bytes) -> Path:
        path = self.memory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path

    def add(self, rel: str, mem_id: str, title: str, body: str = "", **kw) -> Path:
        return self.write(rel, memory_text(mem_id, title, body, **kw))

    def dmm(self, *args: str, cwd: Path | None = None, input: str | None = None,
            env: dict | None = None) -> subprocess.CompletedProcess:
        return run_dmm(*args, cwd=cwd or self.root, input=input, env=env)

    @property
    def ws(self) -> Workspace:
        return Workspace(self.root)


def run_dmm(*args: str, cwd: Path, input: str | None = None,
            env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("DMM_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "dmm", *args], cwd=cwd, capture_output=True,
                          text=True, input=input, env=full_env,
                          stdin=subprocess.DEVNULL if input is None else None)


@pytest.fixture(autouse=True, scope="session")
def _a_person_runs_the_tests():
    """The tests run dmm as a person would: the variables agents set in their shells (and dmm
    in what it starts for them) would make every decision command refuse. Tests that play an
    agent set them themselves."""
    from dmm.agents.identity import MARKERS

    saved = {name: os.environ.pop(name) for name, _, _ in MARKERS if name in os.environ}
    # the agent hook's 0.9 s deadline is for an agent's user; on a test machine busy with the
    # suite a cold hook can pass it and answer the deadline's line instead of the pack. The
    # deadline's own tests set it themselves.
    deadline = os.environ.get("DMM_HOOK_DEADLINE_MS")
    os.environ["DMM_HOOK_DEADLINE_MS"] = "10000"
    yield
    os.environ.update(saved)
    if deadline is None:
        os.environ.pop("DMM_HOOK_DEADLINE_MS", None)
    else:
        os.environ["DMM_HOOK_DEADLINE_MS"] = deadline


def run_folder(tmp_path_factory) -> Path:
    """A folder of this test run shared by all its processes: under pytest-xdist each worker
    has a temporary folder of its own (popen-gw0, ...) inside the run's; alone, the run's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(autouse=True, scope="session")
def _a_model_cache_of_this_run(tmp_path_factory):
    """Derived model files (docs/semantic.md) go to a folder of this test run, never to the
    user's cache: every test and every background process the tests start (they inherit the
    environment) finds them there, and the workers of one run share them (the derivation is
    atomic; tests/semantic/conftest.py derives it once, under a lock)."""
    from dmm.semantic import model

    folder = run_folder(tmp_path_factory) / "model-cache"
    folder.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(model.CACHE_ENV, str(folder))
        yield folder


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Test User")
    git(root, "config", "user.email", "test@example.com")
    return root


@pytest.fixture
def repo(git_repo: Path) -> Repo:
    ws = Workspace(git_repo)
    init(ws)
    (ws.memory_dir / "baseline" / "dmm_usage.md").unlink()
    return Repo(git_repo)
