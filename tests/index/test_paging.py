"""Listings read what they show (issue 38 item 2): `dmm list`, the conflict page, the
counts of `dmm status` and the streamed `--json` give what the whole-store code gave."""

from __future__ import annotations

import datetime as dt
import io
import itertools
import json
import sqlite3

import pytest

from dmm.conflicts import store
from dmm.index import read
from dmm.index.refresh import open_fresh
from dmm.memory.select import SORTS, Selection, select

TODAY = dt.date(2026, 11, 28)


@pytest.fixture(scope="module")
def listed(tmp_path_factory):
    """A store whose memories differ in every column a listing filters or sorts by, cases of
    tags included (the Kelvin sign lowers to 'k'), and an open cache on it."""
    from dmm.scaffold import init
    from dmm.workspace import Workspace
    from tests.conftest import Repo, git, memory_text

    root = tmp_path_factory.mktemp("paging")
    git(root, "init", "-q", "-b", "main")
    init(Workspace(root))
    repo = Repo(root)
    (repo.memory / "baseline" / "dmm_usage.md").unlink()
    tags = ["[api]", "[API, retry]", "[Api_v2]", "[\u212aafka]", "[kafka]", "[caf\u00e9]",
            "[retry, api]", "[100%_done]"]
    scopes = ["project", "global", "agent", "ephemeral"]
    for n in range(40):
        created = "" if n % 9 == 0 else f"created: {TODAY - dt.timedelta(days=n * 23)}\n"
        folder = ["project/api", "project/api/v2", "project/apis", "global"][n % 4]
        repo.write(f"{folder}/m{n:02d}.md", memory_text(
            f"mem_2026_01_01_{n:03d}", f"{'Title' if n % 3 else 'title'} {n % 7}",
            f"Body {n}: retry {'Status 413' if n % 5 == 0 else ''} stra\u00dfe",
            scope=scopes[n % 4], tags=tags[n % len(tags)], priority=(n % 4) / 4,
            status="deprecated" if n % 6 == 0 else "active",
            confidence="deprecated" if n % 11 == 0 else "active", extra=created))
    conn, _ = open_fresh(Workspace(root))
    yield conn
    conn.close()


SELECTIONS = [Selection(), Selection(status="all"), Selection(status="deprecated"),
              Selection(scopes=["global", "agent"]), Selection(under="project/api"),
              Selection(under="project/api/"), Selection(tags=["api"]),
              Selection(tags=["API", "retry"]), Selection(tags=["kafka"]),
              Selection(tags=["CAF\u00c9"]), Selection(tags=["100%_done"]),
              Selection(tags=["api_v2"]), Selection(older_than=200),
              Selection(newer_than=300, status="all"), Selection(older_than=10 ** 9),
              Selection(words=["status 413"]), Selection(words=["STRASSE"]),
              Selection(words=["retry"], tags=["api"], status="all")]


@pytest.mark.parametrize("chosen", SELECTIONS, ids=repr)
def test_a_listing_is_what_selecting_from_the_whole_store_gave(listed, chosen):
    everything = read.memories(listed)  # the old way: every memory, then select()
    for sort, reverse in itertools.product(SORTS, (False, True)):
        s = Selection(**{**chosen.__dict__, "sort": sort, "reverse": reverse})
        want = select(everything, s, TODAY)
        for limit in (None, 1, 3):
            shown, total = read.listing(listed, s, limit, today=TODAY)
            assert total == len(want)
            assert [m.path for m in shown] == [m.path for m in want[:limit]], (sort, reverse)
        assert [m.path for m in read.iter_listing(listed, s, today=TODAY)] == \
            [m.path for m in want]


def test_status_counts_are_the_group_counts(listed):
    rows = read.memories(listed)
    by = lambda key, ms: {k: sum(1 for m in ms if key(m) == k) for k in {key(m) for m in ms}}  # noqa: E731
    counts = read.counts(listed)
    assert counts["total"] == len(rows)
    assert counts["by_scope"] == by(lambda m: m.scope, rows)
    assert counts["by_status"] == by(lambda m: m.status, rows)
    assert counts["active_by_scope"] == by(lambda m: m.scope,
                                           [m for m in rows if m.status == "active"])


def test_streamed_json_is_the_same_text(monkeypatch):
    from dmm.cli import common

    items = [{"a": 1, "b": [1, 2, {"c": "x\ny"}], "d": None, "e": "\u00e9"}] * 450
    for before, rows, after in (({}, items, {"total": 3}), ({"x": [1]}, [], {"n": 0}),
                                ({}, items[:1], {}), ({"k": {"v": 1}}, items[:2], {"t": 2})):
        want, got = io.StringIO(), io.StringIO()
        monkeypatch.setattr("click.echo", lambda text, nl=True, out=want:
                            out.write(text + ("\n" if nl else "")))
        common.emit_json({**before, "memories": rows, **after})
        monkeypatch.setattr("click.echo", lambda text, nl=True, out=got:
                            out.write(text + ("\n" if nl else "")))
        common.emit_json_stream(before, "memories", iter(rows), lambda after=after: after)
        assert got.getvalue() == want.getvalue()
        json.loads(got.getvalue())


def _conflict_row(cid: str, confidence: float) -> tuple:
    record = {"conflict_id": cid, "type": "duplicate", "detection_method": "semantic",
              "confidence": round(confidence, 3), "description": "d", "evidence": "e",
              "memories": [], "status": "unresolved", "detected_at": "", "methods": []}
    return (cid, "mem_a", "mem_b", "duplicate", "semantic", confidence, "d", "e",
            json.dumps(record), "", "scan")


def test_a_page_of_conflicts_is_the_head_of_the_whole_list_where_scores_round_alike():
    from dmm.index import db

    conn = db.in_memory()
    # unrounded scores order 'z' first, the recorded (rounded) ones order by id: the page must
    # follow the recorded order, as the whole list sorted in Python did
    scores = {"conflict_z": 0.81234, "conflict_a": 0.8121, "conflict_c": 0.8121,
              "conflict_m": 0.8119, "conflict_q": 0.9, "conflict_b": 0.5, "conflict_y": 0.8115}
    conn.executemany("INSERT INTO conflicts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     [_conflict_row(cid, s) for cid, s in scores.items()])
    whole, total = store.query(conn)
    want = [c.conflict_id for c in sorted(whole, key=lambda c: (-c.confidence, c.conflict_id))]
    for limit in range(1, len(scores) + 2):
        page, n = store.query(conn, limit=limit)
        assert n == total == len(scores)
        assert [c.conflict_id for c in page] == want[:limit], limit
    page, n = store.query(conn, exclude={"conflict_a"}, limit=2)
    assert [c.conflict_id for c in page] == ["conflict_q", "conflict_c"] and n == 6


def test_the_conflict_page_reads_the_index_not_the_rows():
    from dmm.index import db

    conn = db.in_memory()
    plan = " ".join(r[-1] for r in conn.execute(
        "EXPLAIN QUERY PLAN SELECT conflict_id, confidence FROM conflicts WHERE "
        "confidence >= 0 AND conflict_id NOT IN ('x') ORDER BY confidence DESC, conflict_id "
        "LIMIT 50"))
    assert "COVERING INDEX conflicts_rank" in plan and "TEMP B-TREE" not in plan
    plan = " ".join(r[-1] for r in conn.execute(
        "EXPLAIN QUERY PLAN SELECT status, scope, count(*) FROM memories GROUP BY status, scope"))
    assert "COVERING INDEX memories_status_scope" in plan
    assert isinstance(conn, sqlite3.Connection)


def test_usage_top_pages_in_the_order_the_whole_list_had(repo):
    from dmm.usage.log import connect, memory_stats

    conn = connect(repo.ws)
    rows = [(f"mem_{n % 7}", f"project/m{(n * 3) % 7}.md" if n % 7 else "a.md", f"q{n}",
             f"2026-11-0{1 + n % 9}T00:00:00+00:00", 0.5, n % 2, "retrieved")
            for n in range(60) for _ in range(n % 4)]
    conn.executemany("INSERT INTO memory_usage(memory_id, path, query_id, timestamp, "
                     "relevance_score, was_included, source) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    conn.close()
    whole = sorted(memory_stats(repo.ws), key=lambda s: (-s["total_retrievals"], s["path"]))
    assert len({s["total_retrievals"] for s in whole}) < len(whole)  # ties, decided by path
    for top in (1, 3, len(whole) + 1):
        assert memory_stats(repo.ws, top=top) == whole[:top]
    assert memory_stats(repo.ws, top=0) == whole
