"""How real stores are written: per-stack rule books, long guides, shared collection tags, a
change mentioned in passing. None of these is a conflict; the same words as a statement are.
Each test fails on the detector before it learned the rule it names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dmm.conflicts import calibration, sanity
from dmm.conflicts.model import Conflict, ConflictMemory, conflict_id

from .test_detection import add, detect

ROOT = Path(__file__).resolve().parents[2]


def test_rule_books_for_two_stacks_do_not_compete(repo):
    add(repo, "project/vue.md", "mem_2025_06_10_001", "Vue 3 Development Instructions",
        "Components use the Composition API. Keep state in Pinia stores.")
    add(repo, "project/react.md", "mem_2025_06_10_002", "React Development Instructions",
        "Components are function components. Keep state in hooks.")
    assert detect(repo) == {}


def test_two_statements_choosing_frameworks_do(repo):
    add(repo, "project/vue.md", "mem_2025_06_10_001", "The web frontend is built with Vue",
        "Every page of the web frontend is a Vue single-file component.")
    add(repo, "project/react.md", "mem_2025_06_10_002", "The web frontend is built with React",
        "Every page of the web frontend is a React component.")
    assert detect(repo) == {("mem_2025_06_10_001", "mem_2025_06_10_002"): "contradictory"}


@pytest.mark.parametrize("first, second", [
    ("Cursor rules for Angular development with TypeScript integration.",
     "Cursor rules for React development with TypeScript integration."),
    ("vite best practices", "webpack best practices"),
    ("Use this agent when building cross-platform apps with Flutter",
     "Use when building mobile apps with React Native"),
    ("This file provides guidance on building Vue applications with Nuxt.",
     "This document describes building React applications with Next.js."),
])
def test_titles_describing_a_document_name_its_stack(repo, first, second):
    # a title that says what a document is for ("rules for", "best practices", "use when")
    # names the stack it governs, as a Title Case heading does; it chooses nothing
    add(repo, "project/one.md", "mem_2025_06_10_001", first,
        "Write small components with typed props. Keep side effects in one place, test every "
        "component, and keep the build fast.")
    add(repo, "project/two.md", "mem_2025_06_10_002", second,
        "Write small components with typed props. Keep side effects out of rendering, test "
        "the public behaviour, and keep the bundle small.")
    assert detect(repo) == {}


def test_a_sentence_that_ends_in_a_document_word_still_states_a_choice(repo):
    add(repo, "project/google.md", "mem_2025_06_10_001",
        "Docstrings follow the Google style guide",
        "Every public function has a docstring with Args and Returns sections.")
    add(repo, "project/numpy.md", "mem_2025_06_10_002",
        "Docstrings follow the NumPy style guide",
        "Every public function has a docstring with Parameters and Returns sections.")
    assert detect(repo) == {("mem_2025_06_10_001", "mem_2025_06_10_002"): "contradictory"}


def test_a_title_that_only_repeats_its_file_name_names_a_topic(repo):
    # imported documents often get their file's name as a title
    add(repo, "project/react_mobx.md", "mem_2025_06_10_001", "react mobx",
        "Keep stores small and observable; derive values with computed.")
    add(repo, "project/react_redux.md", "mem_2025_06_10_002", "react redux",
        "Keep slices small; derive values with selectors.")
    assert detect(repo) == {}


def test_a_file_named_after_its_statement_still_states_it(repo):
    add(repo, "project/postgres_is_the_database.md", "mem_2025_06_10_001",
        "Postgres is the database", "Every service keeps its data in one Postgres cluster.")
    add(repo, "project/mysql_is_the_database.md", "mem_2025_06_10_002",
        "MySQL is the database", "Every service keeps its data in one MySQL cluster.")
    assert detect(repo) == {("mem_2025_06_10_001", "mem_2025_06_10_002"): "contradictory"}


_GUIDE = """## Queries

Define every query with `queryOptions` and a key factory such as `todoKeys.detail(id)`; call
`useQuery` and `useSuspenseQuery` with those options. {a}

## Mutations

Invalidate with `queryClient.invalidateQueries` after `useMutation` succeeds; use
`setQueryData` for optimistic updates and roll back in `onError`. {b}

## Server rendering

Prefetch on the server with `prefetchQuery`, wrap the page in `HydrationBoundary` and pass
`dehydrate(queryClient)`. {c}

## Testing

Wrap components in a fresh `QueryClient` per test with retries off. {d}
"""


def test_two_guides_on_one_library_are_duplicates_only_when_copies(repo):
    # two rule books for one library share its names and words by nature
    add(repo, "project/query.md", "mem_2025_06_10_001", "TanStack Query v5 Guidelines",
        _GUIDE.format(a="Keep staleTime explicit.", b="Never mutate cached data in place.",
                      c="Create the client once per request.", d="Mock the network, not hooks."))
    add(repo, "project/query_next.md", "mem_2025_06_10_002",
        "Next.js App Router combined with TanStack Query v5",
        _GUIDE.format(a="Colocate options with the route segment that reads them.",
                      b="Call server actions as mutation functions.",
                      c="Use a per-request client in server components only.",
                      d="Render routes with the test client provider."))
    assert detect(repo) == {}
    # a third that repeats the first one almost word for word is a copy
    add(repo, "project/query_copy.md", "mem_2025_06_10_003", "TanStack Query v5 Guidelines",
        _GUIDE.format(a="Keep staleTime explicit.", b="Never mutate cached data in place.",
                      c="Create the client once per request.", d="Mock the network."))
    assert detect(repo) == {("mem_2025_06_10_001", "mem_2025_06_10_003"): "duplicate"}


def test_one_rule_deep_in_a_guide_says_nothing_against_another_guide(repo):
    sections = "\n\n".join(f"## {name}\n\n{text}" for name, text in [
        ("Routes", "Define routes in files under `src/routes` with `createFileRoute`."),
        ("Loaders", "Fetch data in route loaders with the query client."),
        ("Links", "Navigate with `Link` and typed params.")])
    add(repo, "project/router.md", "mem_2025_06_10_001", "Router Guidelines",
        sections + "\n\n## Search\n\nSearch params are validated in the route, never in "
        "component effects.")
    add(repo, "project/routing.md", "mem_2025_06_10_002",
        "Typed routing for React apps with search params validated in component effects",
        sections + "\n\n## Testing\n\nRender routes with a memory history in tests.")
    assert detect(repo) == {}


def test_an_instruction_that_mentions_a_change_records_none():
    from dmm.conflicts.cues import records_change

    assert not records_change("Add a note to the README explaining that the repo has been "
                              "retired.")
    assert records_change("The payments repo has been retired.")
    assert records_change("Paging moved from Opsgenie to PagerDuty in May.")


def test_the_names_a_title_is_for_are_its_context(repo):
    add(repo, "project/alerts.md", "mem_2025_01_10_001",
        "Rotate the Fastly token for the Emergency Alerts application",
        "Create the new token in the Fastly UI, store it in the alerts app's secrets and redeploy.")
    add(repo, "project/exporter.md", "mem_2025_02_10_001",
        "Rotate the Fastly token for the Prometheus exporter",
        "The exporter reads its token from the monitoring namespace; restart its pod afterwards.")
    assert detect(repo) == {}


def test_two_headings_for_two_versions_are_two_documents(repo):
    add(repo, "project/r80.md", "mem_2025_01_10_001", "Guidance for upgrades to Rails 8.0",
        "Upgrade apps to Rails 8.0 one at a time and run the full suite before merging.")
    add(repo, "project/r81.md", "mem_2026_01_10_001", "Guidance for upgrades to Rails 8.1",
        "Upgrade apps to Rails 8.1 one at a time and run the full suite before merging.")
    assert detect(repo) == {}


def test_a_lower_bound_on_a_version_admits_the_newer_one(repo):
    add(repo, "project/sdk.md", "mem_2025_01_10_001", "The SDK runs on current Node.js",
        "The SDK requires Node.js 18.0 or later and ships its own type definitions.")
    add(repo, "project/app.md", "mem_2025_02_10_001", "The app runs on Node.js 22",
        "The app's services use Node.js 22 LTS and its built-in test runner.")
    add(repo, "project/old.md", "mem_2025_03_10_001", "The legacy worker stays on Node.js 16",
        "The legacy worker pins Node.js 16 until its SDK calls are rewritten.")
    found = detect(repo)
    assert ("mem_2025_01_10_001", "mem_2025_02_10_001") not in found  # 22 is "18.0 or later"
    assert found.get(("mem_2025_01_10_001", "mem_2025_03_10_001")) == "contradictory"


def test_a_change_in_passing_leaves_older_memories_alone(repo):
    add(repo, "project/db.md", "mem_2025_01_10_001", "Orders are stored in PostgreSQL",
        "The order service keeps its orders in PostgreSQL, one table per order state.")
    add(repo, "project/guide.md", "mem_2025_09_10_001", "How to write an order export job",
        "Order export jobs read the orders from a replica and write CSV files to the exports "
        "bucket; keep them idempotent. The old order exports that read PostgreSQL directly "
        "were migrated to the replica; never point a new order job at the primary.")
    assert detect(repo) == {}


def test_a_change_that_is_a_memorys_point_makes_the_older_one_stale(repo):
    add(repo, "project/db.md", "mem_2025_01_10_001", "Orders are stored in PostgreSQL",
        "The order service keeps its orders in PostgreSQL.")
    add(repo, "project/move.md", "mem_2025_09_10_001", "Orders moved from PostgreSQL to DynamoDB",
        "The order service keeps its orders in DynamoDB since September.")
    assert detect(repo) == {("mem_2025_01_10_001", "mem_2025_09_10_001"): "stale"}


_ANDROID_STORE = [  # a team's store where "Android" is in most memories: it binds nothing
    ("Android builds use Gradle 8", "Every Android build runs Gradle 8 with the version catalog."),
    ("Android screenshots are taken on a Pixel emulator", "Store screenshots come from CI."),
    ("Android strings live in one module", "Translators edit the strings module only."),
    ("Crash reports go to Sentry", "The Android client uploads crashes with ProGuard maps."),
    ("Feature flags are read at start-up", "The Android app caches flags for one session."),
    ("Deep links are declared in the manifest", "Every Android deep link has an intent test."),
    ("Dark theme follows the system setting", "No screen of the app forces a light background."),
    ("Analytics events are named in snake_case", "Event names are reviewed by the data team."),
    ("Accessibility labels on every button", "TalkBack reads each control by its label."),
    ("Network calls go through Retrofit", "One OkHttp client is shared by all services."),
    ("Images are loaded with Coil", "Placeholders are vector drawables."),
    ("Database migrations are tested", "Each Room migration has a test with old data."),
    ("Push notifications use Firebase", "Topics are named after the user's region."),
    ("Beta builds go to the internal track", "Testers install them from Play Console."),
    ("Kotlin code style is ktlint", "CI fails on any ktlint finding."),
    ("Offline mode keeps the last feed", "The app stores the feed for 24 hours."),
    ("App size stays under 30 MB", "Large assets are downloaded on first use."),
    ("Login uses the system account picker", "The app never asks for a password itself."),
]


def test_a_change_in_the_title_is_told_by_the_first_sentence(repo):
    for n, (title, body) in enumerate(_ANDROID_STORE):
        add(repo, f"project/s{n}.md", f"mem_2024_06_01_{n + 1:03d}", title, body,
            tags="[android]")
    # the title records the handover; whose it was is said only in the first sentence
    add(repo, "project/old.md", "mem_2025_01_10_001", "Priya maintains the Android app",
        "She reviews every release of the app and signs the bundle.", tags="[android]")
    add(repo, "project/new.md", "mem_2025_09_10_001",
        "Android app upkeep handed to the Harbor team",
        "Since Priya left for payments, the Harbor team reviews every release of the app.",
        tags="[android]")
    # the name alone binds no other subject of hers
    add(repo, "project/other.md", "mem_2025_02_10_001", "Priya owns the billing dashboard",
        "She answers questions about the billing dashboard and its monthly exports.")
    assert detect(repo) == {("mem_2025_01_10_001", "mem_2025_09_10_001"): "stale"}


def test_a_recorded_change_binds_by_the_subject_words_when_no_name_does(repo):
    add(repo, "project/old.md", "mem_2025_01_10_001",
        "Invoices are stored as PDF files in the archive bucket",
        "Every invoice is rendered once and kept in the archive bucket.")
    add(repo, "project/new.md", "mem_2025_09_10_001",
        "Invoice files live in the document service after the archive migration",
        "The document service keeps every invoice file and renders it on request.")
    assert detect(repo) == {("mem_2025_01_10_001", "mem_2025_09_10_001"): "stale"}


def test_one_value_in_two_titles_in_other_words_is_a_duplicate(repo):
    add(repo, "project/a.md", "mem_2025_03_10_001",
        "Uptime checks ping the billing API every 20 minutes",
        "The uptime monitor calls /health on the billing API.")
    add(repo, "project/b.md", "mem_2025_06_10_001",
        "The billing API uptime probe runs 3 times per hour",
        "A synthetic probe requests the health endpoint of the billing API.")
    assert detect(repo) == {("mem_2025_03_10_001", "mem_2025_06_10_001"): "duplicate"}


def test_values_in_a_table_are_not_stated_values(repo):
    add(repo, "project/a.md", "mem_2025_03_10_001", "Upstream timeouts of the API gateway",
        "The API gateway gives every upstream call of the search and orders routes 30 seconds "
        "before it answers 504.")
    add(repo, "project/b.md", "mem_2025_04_10_001", "Latency of the API gateway routes",
        "Each route has a latency budget that the weekly report checks:\n\n"
        "| route | upstream call p99 |\n| --- | --- |\n| search | 2 seconds |\n"
        "| orders | 5 seconds |\n")
    assert detect(repo) == {}


def test_words_every_memory_of_a_store_shares_bind_nothing(repo):
    """In a store of rule books that all talk about "code", release notes that "contain no
    code" do not forbid what "How to store source code" is about."""
    subjects = ["go", "rust", "java", "kotlin", "swift", "ruby", "php", "scala", "elixir",
                "haskell", "lua", "dart", "perl", "ocaml", "clojure", "erlang", "fortran",
                "cobol", "ada", "nim", "zig", "crystal", "julia", "racket"]
    for i, subject in enumerate(subjects, start=1):
        add(repo, f"project/{subject}.md", f"mem_2025_07_{i:02d}_001",
            f"{subject.title()} review habits",
            f"Rules for {subject} code in this collection: review the code before merging, "
            "write tests for new code, keep functions small.", tags=["collection"])
    add(repo, "project/notes.md", "mem_2025_08_01_001", "Writing release notes",
        "Release notes live in the repository of each service, next to its source, and tell "
        "users what changed in words they use. Release notes contain no code.",
        tags=["collection"])
    add(repo, "project/store.md", "mem_2025_08_02_001", "How to store source code",
        "Source code is stored in the organisation on GitHub, one repository per service.",
        tags=["collection"])
    assert detect(repo) == {}
    # the same two memories alone: "code" is then specific to them, and the rule fires
    for subject in subjects:
        (repo.ws.memory_dir / "project" / f"{subject}.md").unlink()
    assert detect(repo) == {("mem_2025_08_01_001", "mem_2025_08_02_001"): "contradictory"}


def test_a_title_word_every_memory_shares_does_not_bind_two_choices(repo):
    # every title of this store says "handling": two titles choosing job queues share nothing
    for i, subject in enumerate(["retry", "error", "upload", "session", "cache", "login",
                                 "invoice", "export", "import", "search", "audit", "billing",
                                 "webhook", "email", "report", "token", "quota", "backup",
                                 "refund", "signup"], start=1):
        add(repo, f"project/{subject}.md", f"mem_2025_07_{i:02d}_001",
            f"{subject.title()} handling in the {subject} module",
            f"The {subject} module keeps its own {subject} rules.")
    add(repo, "project/a.md", "mem_2025_08_01_001", "Async endpoint handling uses Celery",
        "Slow endpoint work is queued.")
    add(repo, "project/b.md", "mem_2025_08_02_001", "Payment handling runs on Dramatiq",
        "Payment retries are queued.")
    assert detect(repo) == {}


def _conflict(a: str, b: str, method: str) -> Conflict:
    return Conflict(conflict_id(a, b), "contradictory", method, 0.9, "", "",
                    [ConflictMemory(a, f"{a}.md", a, "project", 0.5, "primary"),
                     ConflictMemory(b, f"{b}.md", b, "project", 0.5, "secondary")])


def test_one_memory_against_dozens_is_reported_once():
    hub = [_conflict("mem_hub", f"mem_{i:03d}", "value_change") for i in range(20)]
    pair = _conflict("mem_x", "mem_y", "negation")
    chain = _conflict("mem_hub", "mem_old", "supersession_chain")
    kept, artifacts = sanity.check(hub + [pair, chain], store_size=400)
    assert {c.conflict_id for c in kept} == {pair.conflict_id, chain.conflict_id}
    assert [(a.kind, a.subject, a.count) for a in artifacts] == [("memory", "mem_hub", 20)]
    assert "value_change: 20" in artifacts[0].why


def test_one_rule_on_a_large_share_of_pairs_is_reported_once():
    noisy = [_conflict(f"mem_{i:03d}", f"mem_{i + 1:03d}", "temporal") for i in range(40)]
    fine = [_conflict(f"mem_a{i}", f"mem_b{i}", "negation") for i in range(3)]
    kept, artifacts = sanity.check(noisy + fine, store_size=50)  # 40 of 1,225 pairs
    assert kept == fine
    assert [(a.kind, a.subject, a.count) for a in artifacts] == [("rule", "temporal", 40)]
    kept, artifacts = sanity.check(noisy + fine, store_size=2000)  # 40 of ~2 million: fine
    assert len(kept) == 43 and artifacts == []


def test_the_shipped_weights_cover_every_feature():
    fitted = calibration.weights()
    assert set(fitted["coefficients"]) == set(calibration.FEATURES)
    low = calibration.confidence(dict.fromkeys(calibration.FEATURES, 0.0))
    structural = dict.fromkeys(calibration.FEATURES, 0.0) | {"supersession_chain": 0.95,
                                                              "on_point": 1.0}
    assert calibration.confidence(structural) > max(low, 0.5)
    # evidence never counts against a conflict: more of it never lowers the confidence
    assert all(fitted["coefficients"][f] >= 0 for f in calibration.EVIDENCE)


def test_the_eval_tool_reports_what_a_full_scan_stores(repo, tmp_path):
    add(repo, "project/a.md", "mem_2025_01_10_001", "Uploads are capped at 25 MB",
        "The upload endpoint refuses files above 25 MB.")
    add(repo, "project/b.md", "mem_2025_03_10_001", "Uploads are capped at 10 MB",
        "The upload endpoint refuses files above 10 MB.")
    add(repo, "project/c.md", "mem_2025_02_10_001", "Logs are kept for 30 days",
        "Application logs are deleted after 30 days.")
    scanned = detect(repo)
    assert scanned  # a store with something to find
    script = (f"import sys, json; sys.path.insert(0, {str(ROOT / 'tools')!r}); "
              "from eval_conflicts import load, run, reported; from pathlib import Path; "
              f"found = reported(run(load(Path({str(repo.ws.memory_dir)!r})))); "
              "print(json.dumps({' '.join(k): c.type for k, c in found.items()}))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert {tuple(k.split()): t for k, t in json.loads(out).items()} == scanned


def test_a_scan_writes_the_text_of_the_conflicts_it_reports_only(repo, monkeypatch):
    """Fifteen copies of one rule are 105 duplicate findings, each memory in 14: artifacts of
    how the store is written, left out. Their descriptions and evidence are never written
    (on a large generated store they were most of a full scan's memory); the pair beside
    them is reported as before."""
    from dmm.conflicts import merger, scanner

    for i in range(15):
        add(repo, f"project/copy{i:02d}.md", f"mem_2025_09_{i + 1:02d}_001",
            "Deploys go through the release train",
            "Every deploy goes through the weekly release train; hotfixes too.")
    add(repo, "project/ttl.md", "mem_2025_10_01_001", "Session tokens expire after 30 minutes",
        "Session tokens expire after 30 minutes of inactivity.")
    add(repo, "project/ttl2.md", "mem_2025_10_02_001", "Session tokens expire after 30 minutes",
        "Session tokens expire after 30 minutes of inactivity.")
    written = []

    def conflict(finding, features, detected_at):
        written.append(finding.memory_ids)
        return merger.conflict(finding, features, detected_at)

    monkeypatch.setattr(scanner, "conflict", conflict)
    found = detect(repo)
    assert found == {("mem_2025_10_01_001", "mem_2025_10_02_001"): "duplicate"}
    assert written == [("mem_2025_10_01_001", "mem_2025_10_02_001")]
