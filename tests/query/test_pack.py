"""Memory Pack assembly: baseline, ranking, packing, filters and warnings."""

from __future__ import annotations

import datetime as dt

import pytest

from dmm import config
from dmm.index.refresh import open_fresh
from dmm.query.pack import PackOptions, build_pack

CFG = config.DEFAULTS["query"]


def pack_for(repo, task: str, cfg: dict | None = None, **opts):
    conn, _ = open_fresh(repo.ws)
    try:
        return build_pack(conn, task, PackOptions(**{"budget": 5000, **opts}), cfg or CFG)
    finally:
        conn.close()


def ids(entries) -> list[str]:
    return [e.memory.id for e in entries]


@pytest.fixture
def store(repo):
    repo.add("baseline/safety.md", "mem_2026_01_01_001", "Never push to main directly",
             "Always open a pull request; main is protected.", scope="baseline", priority=0.9)
    repo.add("project/db/migrations.md", "mem_2026_01_02_001", "Database migrations use Alembic",
             "Every schema change is an Alembic migration reviewed with the code.",
             tags="[database, migrations]")
    repo.add("project/api/pagination.md", "mem_2026_01_03_001", "List endpoints paginate with cursors",
             "Collection endpoints return a cursor; offsets are not allowed.", tags="[api]")
    repo.add("global/logging.md", "mem_2026_01_04_001", "Logging uses structlog with JSON output",
             "Use structlog; never print. Logs are JSON lines.", scope="global",
             tags="[logging]")
    repo.add("deprecated/old_db.md", "mem_2025_01_01_001", "Database migrations are run by hand",
             "Someone runs SQL scripts on the database by hand.", status="deprecated",
             tags="[database]")
    repo.add("ephemeral/session.md", "mem_2026_01_05_001", "Database migration 42 is half done",
             "The migration for invoices is half done in this session.", scope="ephemeral",
             tags="[database, session]", extra="expires: 2026-01-10\n")
    return repo


def test_baseline_always_comes_first_in_full(store):
    pack = pack_for(store, "database migrations")
    assert ids(pack.baseline) == ["mem_2026_01_01_001"]
    assert pack.baseline[0].memory.body.startswith("# Never push")


def test_relevant_memory_ranks_first_and_unrelated_ones_stay_out(store):
    pack = pack_for(store, "how do I write a database schema migration?",
                    today=dt.date(2026, 1, 6))
    assert ids(pack.retrieved)[0] == "mem_2026_01_02_001"
    assert "mem_2026_01_04_001" not in ids(pack.retrieved)  # logging: unrelated


def test_deprecated_memories_only_on_request(store):
    task = "run database migration scripts by hand"
    assert "mem_2025_01_01_001" not in ids(pack_for(store, task).retrieved)
    assert "mem_2025_01_01_001" in ids(pack_for(store, task, include_deprecated=True).retrieved)


def test_expired_ephemeral_memories_are_left_out(store):
    task = "invoice migration half done"
    assert "mem_2026_01_05_001" in ids(pack_for(store, task, today=dt.date(2026, 1, 9)).retrieved)
    assert "mem_2026_01_05_001" not in ids(pack_for(store, task,
                                                   today=dt.date(2026, 1, 11)).retrieved)
    assert "mem_2026_01_05_001" not in ids(pack_for(store, task, today=dt.date(2026, 1, 9),
                                                   exclude_ephemeral=True).retrieved)


def test_scope_and_tag_filters(store):
    task = "database logging api pagination migrations"
    only_global = pack_for(store, task, scopes=("global",))
    assert ids(only_global.retrieved) == ["mem_2026_01_04_001"]
    tagged = pack_for(store, task, tags=("api",))
    assert ids(tagged.retrieved) == ["mem_2026_01_03_001"]


def test_greedy_packing_respects_the_budget_and_lists_what_did_not_fit(repo):
    repo.add("baseline/b.md", "mem_2026_01_01_001", "Baseline rule", "short", scope="baseline")
    repo.add("project/big.md", "mem_2026_01_02_001", "Cache invalidation for the catalog",
             "cache catalog invalidation " * 120, priority=0.9)
    repo.add("project/small.md", "mem_2026_01_02_002", "Catalog cache keys",
             "The catalog cache key includes the tenant.", priority=0.5)
    pack = pack_for(repo, "catalog cache invalidation", budget=150)
    used = pack.baseline_tokens + pack.retrieved_tokens
    assert used <= 150
    assert ids(pack.retrieved) == ["mem_2026_01_02_002"]
    assert ids(pack.excluded) == ["mem_2026_01_02_001"]
    assert pack.stats()["excluded_count"] == 1 and "tokens" in pack.excluded[0].reason


def test_baseline_over_budget_warns_and_leaves_no_room(repo):
    repo.add("baseline/b.md", "mem_2026_01_01_001", "Long baseline", "rule " * 300,
             scope="baseline")
    repo.add("project/p.md", "mem_2026_01_02_001", "Rule about rules", "rule rules")
    pack = pack_for(repo, "rules", budget=50)
    assert ids(pack.baseline) == ["mem_2026_01_01_001"]
    assert pack.retrieved == []
    assert any("more than the budget of 50" in w for w in pack.warnings)


def test_priority_and_confidence_break_ties(repo):
    body = "Feature flags are configured in the flags service."
    repo.add("project/a.md", "mem_2026_01_02_001", "Feature flags", body, priority=0.2,
             confidence="experimental")
    repo.add("project/b.md", "mem_2026_01_02_002", "Feature flags", body, priority=0.9,
             confidence="stable")
    pack = pack_for(repo, "feature flags")
    assert ids(pack.retrieved) == ["mem_2026_01_02_002", "mem_2026_01_02_001"]
    assert pack.retrieved[0].relevance == pytest.approx(pack.retrieved[1].relevance)


def test_a_paraphrased_task_finds_the_memory_through_related_words(repo):
    repo.add("project/money.md", "mem_2026_01_02_001", "Prices are stored as integer cents",
             "Every price and fee is an integer number of cents, never a float.",
             tags="[money]")
    repo.add("project/logs.md", "mem_2026_01_02_002", "Logs are JSON lines",
             "Structured logging with one JSON object per line.", tags="[logging]")
    task = "which column type should hold what an item costs?"
    pack = pack_for(repo, task)
    assert ids(pack.retrieved)[:1] == ["mem_2026_01_02_001"]
    without = pack_for(repo, task, cfg={**CFG, "expansion": False})
    assert "mem_2026_01_02_001" not in ids(without.retrieved)


def test_no_match_warns(store):
    pack = pack_for(store, "kubernetes helm chart values")
    assert pack.retrieved == []
    assert any("no memory matched" in w for w in pack.warnings)


def test_invalid_files_and_duplicate_ids_are_warned_about(store):
    store.write("project/bad.md", "no frontmatter")
    store.add("project/dup.md", "mem_2026_01_03_001", "Another pagination note")
    pack = pack_for(store, "pagination")
    assert any("1 memory file has errors and was left out" in w for w in pack.warnings)
    assert any("used by more than one file" in w for w in pack.warnings)


def test_json_shape(store):
    data = pack_for(store, "database migrations").to_dict()
    assert set(data) == {"query", "baseline", "retrieved", "excluded", "stats", "warnings",
                         "notes", "conflicts"}
    entry = data["retrieved"][0]
    for key in ("memory_id", "path", "title", "scope", "tokens", "relevance_score", "source"):
        assert key in entry
    assert entry["source"] == "retrieval" and data["baseline"][0]["source"] == "baseline"
    assert data["stats"]["total_tokens"] == (data["stats"]["baseline_tokens"]
                                             + data["stats"]["retrieved_tokens"])
