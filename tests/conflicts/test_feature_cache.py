"""The cache keeps each memory's text features (conflicts/feature_cache.py): a scan reads them
instead of computing them, finds exactly what it finds computing them, and computes them again
when the memory changed, when the code that computes them changed, and after a rebuild."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dmm.conflicts import feature_cache
from dmm.conflicts.features import build, text_features
from dmm.conflicts.service import run_scan
from dmm.index import db, read
from dmm.index.refresh import open_fresh
from tests.conflicts.test_incremental import repeat_and_reverse
from tests.conftest import git

WORDTRAP = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "wordtrap" / "memory"


def conflicts(conn) -> set[tuple]:
    return set(conn.execute("SELECT conflict_id, a, b, type, detection_method, confidence, "
                            "description, evidence FROM conflicts"))


def kept(conn) -> dict[str, tuple[bytes, bytes]]:
    return {path: (k, data) for path, k, data in
            conn.execute("SELECT path, key, data FROM features")}


@pytest.fixture
def store(repo):
    """46 memories written by hand, some of them edited to repeat and reverse another
    (duplicates, overlaps, contradictions), committed and scanned fully: their features are
    kept."""
    shutil.copytree(WORDTRAP, repo.memory, dirs_exist_ok=True)
    repeat_and_reverse(sorted(repo.memory.rglob("*.md")))
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "store")
    conn, _ = open_fresh(repo.ws)
    run_scan(repo.ws, conn, full=True)
    yield repo, conn
    conn.close()


@pytest.fixture
def computed(monkeypatch) -> list[str]:
    """The paths whose text features are computed (not read from the cache) from now on."""
    paths: list[str] = []

    def counting(m):
        paths.append(m.path)
        return text_features(m)

    monkeypatch.setattr(feature_cache, "text_features", counting)
    return paths


def test_features_read_back_are_the_features_computed(store):
    repo, conn = store
    repo.add("project/runtime.md", "mem_2026_11_28_002", "Use Argon2id for password hashing",
             "Services run on Node.js 18 or later and Python 3.11+. Never call `eval` on "
             "input. The pool size is 20 and requests time out after 30 seconds.")
    conn.close()
    conn, _ = open_fresh(repo.ws)
    memories = read.memories(conn)
    assert len(memories) > 40
    fresh = build(memories)
    again = build(memories, texts=lambda m: feature_cache.unpack(
        feature_cache.pack(text_features(m))))
    assert fresh == again  # every field, the named tuples (Quantity, Version) as such
    mine = fresh["mem_2026_11_28_002"]
    assert mine.quantities and mine.versions and mine.prohibitions and mine.choices
    conn.close()


def test_a_full_scan_keeps_every_memory_and_finds_the_same_reading_them(store, computed):
    repo, conn = store
    rows = kept(conn)
    memories = read.memories(conn)
    assert set(rows) == {m.path for m in memories}
    assert all(rows[m.path][0] == feature_cache.key(m) for m in memories)
    first = conflicts(conn)
    assert first
    run_scan(repo.ws, conn, full=True)
    assert computed == []  # every memory's features read from the cache
    assert conflicts(conn) == first
    conn.execute("DELETE FROM features")
    run_scan(repo.ws, conn, full=True)
    assert len(computed) == len(memories)
    assert conflicts(conn) == first


def test_an_incremental_scan_computes_only_the_changed_memory(store, computed):
    repo, conn = store
    before = kept(conn)
    path = sorted(repo.memory.rglob("*.md"))[3]
    rel = path.relative_to(repo.memory).as_posix()
    path.write_text(path.read_text() + "\nThe limit is now 40 requests per minute.\n")
    conn.close()
    conn, _ = open_fresh(repo.ws)
    result = run_scan(repo.ws, conn)
    assert result.scan_type == "incremental" and result.memories_scanned == 1
    assert computed == [rel]  # its candidates' were read, not computed
    after = kept(conn)
    assert after[rel][0] != before[rel][0] and after[rel][1] != before[rel][1]
    assert {p: v for p, v in after.items() if p != rel} == \
        {p: v for p, v in before.items() if p != rel}
    conn.close()


def test_a_memory_moved_or_deleted_loses_its_row_at_the_next_full_scan(store):
    repo, conn = store
    paths = sorted(repo.memory.rglob("*.md"))
    gone = paths[0].relative_to(repo.memory).as_posix()
    paths[0].unlink()
    conn.close()
    conn, _ = open_fresh(repo.ws)
    run_scan(repo.ws, conn, full=True)
    assert gone not in kept(conn)
    conn.close()


def test_features_of_another_version_of_the_code_are_computed_again(store, computed,
                                                                     monkeypatch):
    repo, conn = store
    first = conflicts(conn)
    # no setting of config.toml enters the features (text_features takes none): what else
    # decides them is the code, fingerprinted from its source
    assert feature_cache.code_version() == feature_cache.code_version.__wrapped__()
    monkeypatch.setattr(feature_cache, "code_version", lambda: b"another dmm")
    run_scan(repo.ws, conn, full=True)
    memories = read.memories(conn)
    assert len(computed) == len(memories)
    assert all(k == feature_cache.key(m) for m in memories for k, _ in [kept(conn)[m.path]])
    assert conflicts(conn) == first


@pytest.mark.parametrize("data", [
    b"\x00\xff",  # not marshal at all
    "marshal:a string",  # marshal, but no row's shape
    "marshal:deep",  # a row nested deeper than Python recurses
])
def test_a_damaged_row_is_computed_again(store, computed, data):
    import marshal

    repo, conn = store
    first = conflicts(conn)
    path = next(iter(kept(conn)))
    if data == "marshal:deep":
        nested: list = []
        for _ in range(1900):
            nested = [nested]
        data = marshal.dumps({"title_terms": nested})
    elif isinstance(data, str):
        data = marshal.dumps(data)
    conn.execute("UPDATE features SET data = ? WHERE path = ?", (data, path))
    run_scan(repo.ws, conn, full=True)
    assert computed == [path]
    assert conflicts(conn) == first


def test_a_rebuilt_cache_keeps_none_until_a_scan_computes_them(store, computed):
    # (`dmm reindex`, a newer schema, a damaged cache: the cache is made anew)
    repo, conn = store
    conn.close()
    with db.write_lock(repo.ws.state_dir):
        db.create(repo.ws.state_dir / db.DB_NAME)
    conn, _ = open_fresh(repo.ws)
    assert kept(conn) == {}
    run_scan(repo.ws, conn, full=True)
    assert sorted(computed) == sorted(kept(conn)) == sorted(m.path for m in read.memories(conn))
    conn.close()


def test_an_incremental_scan_loads_the_moves_that_name_what_changed_and_no_other(repo):
    from dmm.conflicts.scanner import load_features

    def add(name, day, title, body):
        repo.add(f"project/{name}.md", f"mem_2025_0{day}_01_001", title, body,
                 extra=f"created: 2025-0{day}-01\n")

    shutil.copytree(WORDTRAP, repo.memory, dirs_exist_ok=True)
    add("jenkins", 1, "Builds run on Jenkins", "Every build runs on Jenkins pipelines, "
        "configured in the ci folder.")
    add("move", 3, "CI moved from Jenkins to Buildkite", "We moved from Jenkins to Buildkite "
        "in March: agents scale with the queue.")
    add("payments", 4, "Payments moved from Stripe to Adyen", "The team moved from Stripe to "
        "Adyen for card payments in April.")
    checklist = repo.add("project/release.md", "mem_2025_06_01_001", "Release checklist",
                         "Tag the release, then trigger the deploy job in Jenkins and watch "
                         "the smoke tests.", extra="created: 2025-06-01\n")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "store")
    conn, _ = open_fresh(repo.ws)
    run_scan(repo.ws, conn, full=True)
    checklist.write_text(checklist.read_text() + "\nAsk the release channel before a "
                         "Friday release.\n")
    conn.close()
    conn, _ = open_fresh(repo.ws)
    features, focus = load_features(conn, {"mem_2025_06_01_001"}, min_sim=0.9)
    assert "mem_2025_03_01_001" in features  # the move away from the Jenkins it names
    assert "mem_2025_04_01_001" not in features  # a move of what it never names
    result = run_scan(repo.ws, conn)
    assert result.scan_type == "incremental" and result.memories_scanned == 1
    incremental = conflicts(conn)
    run_scan(repo.ws, conn, full=True)
    assert conflicts(conn) == incremental
    assert any({a, b} == {"mem_2025_03_01_001", "mem_2025_06_01_001"}
               for _, a, b, *_ in incremental)  # the reversal is found
    conn.close()



def _words(fields: dict) -> list[str]:
    return [w for name in ("title_terms", "anchors", "names") for w in fields[name]]


def _fresh_strings(value):
    """``value`` with each string a new, not interned, object (as a row kept before rows
    were interned holds them)."""
    if isinstance(value, str):
        return "".join(list(value))
    if isinstance(value, (set, list, tuple)):
        return type(value)(_fresh_strings(v) for v in value)
    if isinstance(value, dict):
        return {k: _fresh_strings(v) for k, v in value.items()}
    return value


def test_kept_features_share_their_strings_with_every_other_memorys(store):
    """A word two memories hold is one string in memory, whether the row was written with
    its strings interned or before rows were (interned as it is read)."""
    import marshal

    repo, conn = store
    rows = [data for _, data in kept(conn).values()]
    fields = [feature_cache.unpack(data) for data in rows]
    seen: dict[str, str] = {}
    for word in (w for f in fields for w in _words(f)):
        assert seen.setdefault(word, word) is word
    assert len(seen) < sum(len(_words(f)) for f in fields)  # some word is in two memories
    older = marshal.loads(rows[0])
    assert older.pop(feature_cache.INTERNED) is True
    row = marshal.dumps({name: _fresh_strings(
        [tuple(v) for v in value] if name in feature_cache._NAMED else value)
        for name, value in older.items()})  # a row as kept before: no mark, no interning
    assert any(w is not seen[w] for w in _words(marshal.loads(row)))
    again = feature_cache.unpack(row)
    assert again == fields[0] and _words(again)
    assert all(w is seen[w] for w in _words(again))
