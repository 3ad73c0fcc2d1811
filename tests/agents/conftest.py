"""The agent tests use the attack store of the resolution tests: two conflicting memories
about the gateway's upload ceiling plus unrelated ones, committed after `dmm init`."""

from tests.conflicts.test_resolution import store  # noqa: F401
