"""Ids that hold across clones: memory ids drawn at random after the date, proposal ids with 32
random bits after the second; a collision that still happens cannot land."""

from __future__ import annotations

import datetime as dt
import re

from dmm.memory.edit import next_id
from dmm.memory.model import ID_PATTERN
from dmm.memory.validate import validate_fields
from dmm.proposals.model import PROPOSAL_ID, check_proposal_id, new_proposal_id
from tests.team.conftest import memory


def test_a_thousand_proposals_from_ten_clones_in_one_second_get_distinct_ids():
    """The worst case: every clone makes its proposals within the same second (the time part
    of the id is then the same for all); nothing but the random part tells them apart."""
    now = dt.datetime(2026, 11, 25, 14, 30, 52, tzinfo=dt.timezone.utc)
    ids = [new_proposal_id(now) for _clone in range(10) for _n in range(100)]
    assert len(set(ids)) == 1000
    assert all(PROPOSAL_ID.fullmatch(i) for i in ids)
    assert check_proposal_id("prop_20260111_143052_a1b2")  # ids of older versions still work


def test_a_thousand_new_memories_of_one_day_get_distinct_valid_ids():
    today = dt.date(2026, 11, 25)
    drawn = [next_id(set(), today) for _ in range(1000)]  # clones that never met
    assert len(set(drawn)) == 1000
    assert all(re.fullmatch(ID_PATTERN, i) and i.startswith("mem_2026_11_25_") for i in drawn)
    _, problems = validate_fields({"id": drawn[0], "tags": ["a"], "scope": "project",
                                   "priority": 0.5, "confidence": "active",
                                   "status": "active"}, f"project/{drawn[0]}.md")
    assert not [p for p in problems if p.field == "id"]
    # a clone avoids every id it knows
    taken = {f"mem_2026_11_25_{n:06d}" for n in range(100)}
    assert next_id(taken, today) not in taken
    for bad in ("mem_2026_11_25_0001", "mem_2026_11_25_abcdeI", "mem_2026_11_25_abcdel",
                "mem_2026_11_25_abcde"):
        assert not re.fullmatch(ID_PATTERN, bad, re.ASCII), bad


def test_a_collision_between_clones_is_refused_at_approval(team):
    """Two clones that never met give two memories the same id (written by hand here, as the
    odds of a draw are too small to wait for): the second approval is refused."""
    ann, bob = team.lead, team.clone("bob")
    same = "mem_2026_11_25_k3f9q2"
    first = ann.propose("project/a.md", "Retries back off exponentially", mem_id=same)
    second = bob.propose("project/b.md", "Jobs run on the queue worker", mem_id=same)
    ann.sync()
    bob.sync()
    ann.sync()
    ann.dmm("review", "approve", first)
    refused = ann.dmm("review", "approve", second, ok=False)
    assert refused.returncode != 0 and same in refused.stderr and "already used" in refused.stderr
    # and a new proposal in either clone never draws an id the team has seen
    fresh = bob.json("write", "propose", "--path", "project/c.md", "--reason", "r",
                     input=memory("Cache keys include the tenant"))["memory_id"]
    assert fresh != same
