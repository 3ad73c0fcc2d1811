"""Repositories whose commands use the semantic layer, and the background processes they start,
stopped at the end of each test."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import time
from pathlib import Path

import pytest

from dmm.background import client
from dmm.semantic import model
from dmm.workspace import Workspace

ON = {"DMM_SEMANTIC": "on"}


def daemon_pid(root: Path) -> int | None:
    """The pid of the background process serving ``root``, asked over its socket."""
    try:
        answer = client.ask(root, Workspace(root).shared_state_dir, {"op": "hello"},
                            start_if_absent=False)
    except client.Unavailable:
        return None
    return answer.get("pid")


def cache_built(root: Path) -> None:
    """The word cache of the work tree ``root`` built here, before its first query. A
    background process that starts on an empty cache builds it as it starts, and a query
    meanwhile waits at most FIRST_BUILD_WAIT_S (0.5 s) for that build before it answers with
    the baseline memories alone, by design (dmm/query/run.py; tests/query/test_first_build.py
    tests it): on a loaded machine even a few memories can take longer (seen at a load of 10),
    and these tests are about what meaning ranks, not about the first build."""
    from dmm.index.refresh import open_fresh

    conn, _report = open_fresh(Workspace(root))
    conn.close()


def stop_daemon(root: Path) -> None:
    pid = daemon_pid(root)
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


@pytest.fixture(scope="session", autouse=True)
def model_cache(_a_model_cache_of_this_run):
    """The derived model, made here once per test run in the run's model cache (tests/
    conftest.py), so that no test and no background process waits for a derivation. The
    workers of a parallel run take turns on a lock: the first derives, the others find its
    file."""
    folder = _a_model_cache_of_this_run
    if model.unavailable() is None:
        with open(folder / "derive.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            with contextlib.suppress(ImportError, model.ModelUnavailable):  # no onnx here
                stem = model._derived_stem()
                models = folder / "models"
                if not (models.is_dir() and model._find_derived(models, stem)):
                    model._derive(models, stem)
    yield folder


@pytest.fixture(autouse=True)
def semantic_on(monkeypatch):
    """The layer is on in these tests (tests/conftest.py turns it off everywhere else), and a
    query waits for the index as long as it takes: these tests check what meaning ranks (the
    budget of a query's wait has its own, test_wait.py)."""
    monkeypatch.setenv("DMM_SEMANTIC", "on")
    monkeypatch.setenv("DMM_SEMANTIC_WAIT_S", "60")


@pytest.fixture
def stop_daemons():
    roots: list[Path] = []
    yield roots
    for root in roots:
        stop_daemon(root)
