"""`dmm log` of clones that proposed in the same second lists the same entries in the same
order in every clone: the order is a total key (time, then where the event comes in a
proposal's life, then the commit id), never the order git happened to walk this clone's refs."""

from __future__ import annotations

import json
import os
import subprocess

from tests.team.conftest import Team, memory

SAME_SECOND = "@1772359200 +0000"


def _same_second(clone, pid: str) -> None:
    """The proposal's commit made again with a given time: two agents on two machines do
    propose within one second of each other, and git's clock counts seconds."""
    ref = f"refs/heads/dmm/proposals/{pid}"
    tip = clone.git("rev-parse", ref).strip()
    tree, parent = clone.git("rev-parse", f"{tip}^{{tree}}", f"{tip}^").split()
    message = clone.git("log", "-1", "--format=%B", tip)
    env = {**os.environ, "GIT_AUTHOR_DATE": SAME_SECOND, "GIT_COMMITTER_DATE": SAME_SECOND}
    again = subprocess.run(["git", "commit-tree", tree, "-p", parent], cwd=clone.root,
                           input=message, env=env, check=True, capture_output=True,
                           text=True).stdout.strip()
    clone.git("update-ref", ref, again, tip)


def test_proposals_of_one_second_are_logged_in_one_order_in_every_clone(tmp_path):
    base = tmp_path / "team"
    base.mkdir()
    team = Team(base)
    team.lead.sync()
    clones = [team.lead, team.clone("bob"), team.clone("cho")]
    for clone in clones:
        pid = clone.propose(f"project/{clone.name}.md", f"Builds of {clone.name} are cached")
        _same_second(clone, pid)
    for _ in range(2):
        for clone in clones:
            clone.sync()
    orders = []
    for clone in clones:
        entries = json.loads(clone.dmm("log", "--json").stdout)["entries"]
        orders.append([(e["commit"], e["event"]) for e in entries])
    assert len(orders[0]) == 3
    assert orders[0] == orders[1] == orders[2]
