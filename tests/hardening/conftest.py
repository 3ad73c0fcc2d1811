"""Fixtures for the hardening tests: the two conflicting memories of the attack report plus
unrelated ones, committed after `dmm init`, and a slow git."""

from __future__ import annotations

import pytest

from tests.conflicts.test_resolution import store  # noqa: F401 - the shared attack store
from tests.hardening.faults import SlowGit


@pytest.fixture
def slow_git(tmp_path) -> SlowGit:
    return SlowGit(tmp_path / "slow-git")
