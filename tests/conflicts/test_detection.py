"""Conflict analyzers and scans on small labelled stores of our own (not the eval cases)."""

from __future__ import annotations

import pytest

from dmm import config
from dmm.conflicts.scanner import scan
from dmm.index.refresh import open_fresh


def detect(repo) -> dict[tuple[str, str], str]:
    conn, _ = open_fresh(repo.ws)
    try:
        scan(conn, config.DEFAULTS["conflicts"])
        rows = conn.execute("SELECT a, b, type FROM conflicts").fetchall()
    finally:
        conn.close()
    return {(a, b): t for a, b, t in rows}


def detect_incremental(repo, memory_id: str) -> list[tuple[str, str, str]]:
    """What an incremental scan of one changed memory stores: (a, b, type) rows."""
    conn, _ = open_fresh(repo.ws)
    try:
        scan(conn, config.DEFAULTS["conflicts"], scan_type="incremental",
             focus_ids={memory_id})
        return conn.execute("SELECT a, b, type FROM conflicts").fetchall()
    finally:
        conn.close()


def add(repo, path, mem_id, title, body, **kw):
    repo.add(path, mem_id, title, body, extra=f"created: {mem_id[4:14].replace('_', '-')}\n"
             + kw.pop("extra", ""), **kw)


def test_supersession_problems(repo):
    add(repo, "project/a.md", "mem_2025_01_01_001", "Old runtime rule", "Use Node 18.")
    add(repo, "project/b.md", "mem_2025_06_01_001", "New runtime rule", "Use Node 22.",
        extra="supersedes: [mem_2025_01_01_001]\n")  # orphaned: a is still active
    add(repo, "project/c.md", "mem_2025_02_01_001", "Branching A", "Trunk.",
        extra="supersedes: [mem_2025_02_01_002]\n")
    add(repo, "project/d.md", "mem_2025_02_01_002", "Branching B", "GitFlow.",
        extra="supersedes: [mem_2025_02_01_001]\n")  # circular
    add(repo, "deprecated/e.md", "mem_2025_03_01_001", "Old logging", "stdlib logging.",
        status="deprecated")
    add(repo, "project/f.md", "mem_2025_04_01_001", "Logging with structlog", "structlog.",
        extra="supersedes: [mem_2025_03_01_001]\n")
    add(repo, "project/g.md", "mem_2025_05_01_001", "Logging with loguru", "loguru.",
        extra="supersedes: [mem_2025_03_01_001]\n")  # contested with f
    add(repo, "deprecated/h.md", "mem_2025_07_01_001", "Use pnpm", "pnpm.", status="deprecated",
        extra="supersedes: [mem_2025_07_01_002]\n")
    add(repo, "project/i.md", "mem_2025_07_01_002", "Use npm", "npm ci.")  # incomplete
    add(repo, "deprecated/j.md", "mem_2024_01_01_001", "Flags in env", "env vars.",
        status="deprecated")
    add(repo, "project/k.md", "mem_2025_08_01_001", "Flags in Unleash", "Unleash.",
        extra="supersedes: [mem_2024_01_01_001]\n")  # a proper chain: fine
    found = detect(repo)
    assert found == {
        ("mem_2025_01_01_001", "mem_2025_06_01_001"): "supersession",
        ("mem_2025_02_01_001", "mem_2025_02_01_002"): "supersession",
        ("mem_2025_04_01_001", "mem_2025_05_01_001"): "supersession",
        ("mem_2025_07_01_001", "mem_2025_07_01_002"): "supersession",
    }


CYCLE = ("mem_2025_09_01_001", "mem_2025_09_02_001", "mem_2025_09_03_001")


def _cycle(repo, *, broken: bool = False):
    """Three active memories, each superseding the next, the last the first (a circle)."""
    for n, (mid, title, body) in enumerate(zip(CYCLE, (
            "Deploys go out on Tuesdays", "Deploys go out on Thursdays",
            "Deploys go out any weekday"), ("Tuesday.", "Thursday.", "Any day."))):
        nxt = CYCLE[(n + 1) % 3]
        link = "" if broken and n == 2 else f"supersedes: [{nxt}]\n"
        add(repo, f"project/deploy{n}.md", mid, title, body, extra=link)


def test_a_supersession_circle_of_three_is_one_circular_chain(repo):
    _cycle(repo)
    conn, _ = open_fresh(repo.ws)
    try:
        scan(conn, config.DEFAULTS["conflicts"])
        rows = conn.execute("SELECT a, b, type, evidence FROM conflicts").fetchall()
    finally:
        conn.close()
    chains = [r for r in rows if r[2] == "supersession"]
    assert len(chains) == 1, rows  # not three orphaned links
    a, b, _, evidence = chains[0]
    assert "circular:" in evidence and "orphaned" not in evidence
    assert " -> ".join(CYCLE + CYCLE[:1]) in evidence


def test_breaking_a_circle_turns_it_back_into_links(repo):
    """An incremental scan of the memory whose link closed the circle drops the circular
    finding, although that memory is not one of the pair it was stored under."""
    _cycle(repo)
    assert any(t == "supersession" for t in detect(repo).values())
    _cycle(repo, broken=True)  # the third memory no longer supersedes the first
    rows = detect_incremental(repo, CYCLE[2])
    conn, _ = open_fresh(repo.ws)
    try:
        evidence = [e for (e,) in conn.execute("SELECT evidence FROM conflicts")]
    finally:
        conn.close()
    assert not any("circular" in e for e in evidence), evidence
    assert {(a, b) for a, b, t in rows if t == "supersession"} == {CYCLE[:2], CYCLE[1:]}


UPLOAD = ("Uploads through the public gateway are refused above the size ceiling, answered with "
          "status 413. The ceiling covers multipart and JSON bodies alike.")


def test_value_change_with_other_units_is_a_contradiction(repo):
    add(repo, "project/a.md", "mem_2025_01_10_001", "Upload size ceiling on the gateway",
        f"The ceiling is 8 MB. {UPLOAD}", tags="[uploads, limits]")
    add(repo, "project/b.md", "mem_2025_03_10_001", "Upload size ceiling of the gateway",
        f"The ceiling is 50,000,000 bytes. {UPLOAD}", tags="[uploads, limits]")
    assert detect(repo) == {("mem_2025_01_10_001", "mem_2025_03_10_001"): "contradictory"}


def test_the_same_value_in_other_units_is_no_contradiction(repo):
    add(repo, "project/a.md", "mem_2025_01_10_001", "Upload size ceiling on the gateway",
        f"The ceiling is 10 MiB. {UPLOAD}", tags="[uploads, limits]")
    add(repo, "project/b.md", "mem_2025_03_10_001", "Upload size ceiling of the gateway",
        f"The ceiling is 10,485,760 bytes. {UPLOAD}", tags="[uploads, limits]")
    assert set(detect(repo).values()) <= {"duplicate"}


def test_a_newer_memory_recording_a_migration_makes_the_older_stale(repo):
    add(repo, "project/a.md", "mem_2025_01_10_001", "Jobs are queued in Beanstalkd",
        "Background jobs are queued in Beanstalkd and picked up by the worker pool.",
        tags="[jobs, queue]")
    add(repo, "project/b.md", "mem_2026_01_10_001", "Background jobs moved to SQS",
        "In January we migrated the job queue from Beanstalkd to SQS; the workers now poll SQS.",
        tags="[jobs, queue]")
    assert detect(repo) == {("mem_2025_01_10_001", "mem_2026_01_10_001"): "stale"}


def test_an_upgrade_leaves_versionless_statements_true_and_stales_old_versions(repo):
    add(repo, "project/a.md", "mem_2025_01_10_001", "Search runs on Elasticsearch 7",
        "The product search index runs on Elasticsearch 7 with one shard per tenant.",
        tags="[search, elasticsearch]")
    add(repo, "project/b.md", "mem_2025_02_10_001", "Search tests use an Elasticsearch container",
        "Search tests start an Elasticsearch container through Testcontainers and index fixture "
        "documents before each test module.", tags="[search, testing]")
    add(repo, "project/c.md", "mem_2026_01_10_001", "Search was upgraded to Elasticsearch 8",
        "In January the search cluster was upgraded to Elasticsearch 8; the search tests and the "
        "index mappings now use Elasticsearch 8 too.", tags="[search, elasticsearch]")
    found = detect(repo)
    assert found.get(("mem_2025_01_10_001", "mem_2026_01_10_001")) == "stale"
    assert ("mem_2025_02_10_001", "mem_2026_01_10_001") not in found


def test_the_same_value_about_different_things_is_no_duplicate(repo):
    # a rule "titles stating the same measured value are duplicates" was tried for paraphrased
    # duplicates (3600 s vs one hour) and dropped: without a shared subject it flags this pair
    add(repo, "project/c.md", "mem_2025_09_10_001", "Database backups are kept for 30 days",
        "Nightly database backups are kept for the period and then deleted by the bucket's "
        "lifecycle rule; restores older than that are impossible.", tags="[backups]")
    add(repo, "project/d.md", "mem_2025_09_11_001", "Refresh tokens are valid for 30 days",
        "A refresh token can be exchanged for new access tokens during the period; after that "
        "the user signs in again.", tags="[auth, tokens]")
    assert detect(repo) == {}


def test_the_same_rule_in_two_scopes(repo):
    body = ("Run the whole test suite locally before every push, so that the main branch stays "
            "green and reviewers never chase failures that a local run would have caught.")
    add(repo, "global/a.md", "mem_2025_01_10_001", "Run the full test suite before pushing",
        body, scope="global", tags="[testing, workflow]")
    add(repo, "project/b.md", "mem_2025_05_10_001", "Run all tests before pushing",
        body.replace("whole", "complete"), tags="[testing, workflow]")
    assert detect(repo) == {("mem_2025_01_10_001", "mem_2025_05_10_001"): "scope_overlap"}


def test_unrelated_memories_and_ephemeral_pairs_are_quiet(repo):
    add(repo, "project/a.md", "mem_2025_01_10_001", "Invoices are numbered per year",
        "Invoice numbers restart every January.", tags="[invoices]")
    add(repo, "project/b.md", "mem_2025_01_11_001", "Logs are JSON lines",
        "Every service logs JSON objects to stdout.", tags="[logging]")
    add(repo, "ephemeral/c.md", "mem_2026_03_10_001", "Staging database is down",
        "The staging database is not reachable this morning.", scope="ephemeral")
    add(repo, "ephemeral/d.md", "mem_2026_03_10_002", "Staging database is reachable again",
        "The staging database is reachable again since noon.", scope="ephemeral")
    assert detect(repo) == {}


def test_negation_cues_respect_word_boundaries():
    from dmm.conflicts.cues import NEGATION

    assert NEGATION.search("Do not push to main") and NEGATION.search("Nunca hagas push")
    assert NEGATION.search("Niemals direkt pushen") and NEGATION.search("不要直接推送")
    assert not NEGATION.search("A note about nothingness") or NEGATION.search("nothing")
    assert not NEGATION.search("Take notes and do the knot")


def test_a_body_that_forbids_what_the_other_title_states_is_a_contradiction(repo):
    add(repo, "project/a.md", "mem_2025_03_10_001", "Container images are built with Podman",
        "Every image is built rootless with Podman and pushed by CI. Docker Desktop is not "
        "allowed on developer laptops because of its licence terms.", tags="[containers]")
    add(repo, "project/b.md", "mem_2026_01_10_001", "Developers build images with Docker Desktop",
        "Install Docker Desktop and run make image; the daemon caches layers between builds.",
        tags="[containers]")
    # cites the first rule in a link and names the topic only: neither contradicts it
    add(repo, "project/c.md", "mem_2026_02_10_001", "Image registry",
        "Images go to the internal registry; see [Docker Desktop is not allowed](a.md) for "
        "how images are built.\n\n```sh\n# never do this\ndocker push latest\n```",
        tags="[registry]")
    assert detect(repo) == {("mem_2025_03_10_001", "mem_2026_01_10_001"): "contradictory"}


def test_a_thing_kept_out_of_a_place_is_forbidden_there(repo):
    from dmm.conflicts.cues import prohibitions

    assert [p[1] for p in prohibitions("The npm lockfile stays out of version control")] == [
        ("npm", "lockfil")]
    assert prohibitions("Secrets are kept out of the logs")
    assert not prohibitions("Find out which release broke the build")
    add(repo, "project/a.md", "mem_2025_03_10_001", "Commit the npm lockfile with every change",
        "Every dependency change includes the updated lockfile; CI runs npm ci.")
    add(repo, "project/b.md", "mem_2026_01_10_001",
        "The npm lockfile stays out of version control", "The lockfile is listed in .gitignore and every build resolves the tree with npm install.")
    assert detect(repo) == {("mem_2025_03_10_001", "mem_2026_01_10_001"): "contradictory"}


def test_a_negated_description_or_a_comparison_forbids_nothing(repo):
    from dmm.conflicts.cues import prohibitions

    assert prohibitions("3 not a git repository") == []
    assert prohibitions("This is not the production database") == []
    assert prohibitions("A skipped memory is worse than no memory") == []
    assert prohibitions("Use squash merges, not merge commits")  # a contrast still forbids
    add(repo, "project/layers.md", "mem_2025_03_10_001",
        "Code layers: a thin CLI over the cache, git and the memory model",
        "Commands parse arguments and call one feature package each.")
    add(repo, "project/exit.md", "mem_2025_03_11_001", "Exit codes are documented",
        "Exit codes: 0 success, 2 usage error, 3 not a git repository. A skipped memory is "
        "worse than no memory, so a command that skips one says so.")
    assert detect(repo) == {}


def test_a_condition_forbids_nothing(repo):
    from dmm.conflicts.cues import prohibitions

    assert prohibitions("If there is no lock file, the build fails.") == []
    assert prohibitions("When no token is given, requests are anonymous.") == []
    # the rule around a condition still forbids, the condition's words are not its object
    assert [p[1] for p in prohibitions("Never push to main unless the build is green.")] == [
        ("main",)]
    assert [p[1] for p in prohibitions("If a test fails, do not retry it.")] == [("retri",)]
    assert prohibitions("Use SI units and never imperial ones.")  # SI is no Spanish "si"
    add(repo, "project/cookies.md", "mem_2024_03_10_001",
        "Session cookies in the storefront apps",
        "The storefront apps set a session cookie on login and read it on every request.")
    add(repo, "project/headers.md", "mem_2024_09_11_001", "How the account headers work",
        "The proxy adds the account headers. These headers are not set if there is no session "
        "cookie in the storefront request.")
    assert detect(repo) == {}


def test_one_piece_of_code_in_the_points_of_two_scopes_is_one_rule_twice(repo):
    add(repo, "global/done.md", "mem_2024_12_02_001", "Finish with the linters",
        "Before telling anyone a change is ready, run `tox -e lint,py312` from the root.",
        scope="global")
    add(repo, "project/ready.md", "mem_2025_02_19_001",
        "A green `tox -e lint,py312` is the definition of done",
        "No merge request is opened while any environment of the matrix fails.")
    # one branch named by two different rules: no overlap
    add(repo, "global/branch.md", "mem_2024_05_01_001", "Never push to `trunk` directly",
        "Every change reaches it through a reviewed merge request.", scope="global")
    add(repo, "project/deploy.md", "mem_2025_05_01_001", "`trunk` deploys to staging on merge",
        "The pipeline ships each merge within ten minutes.")
    # one folder where two different rules apply: no overlap
    add(repo, "global/layout.md", "mem_2024_06_01_001", "Runbooks are kept as markdown",
        "Every runbook lives in `ops/runbooks/`, one file per alert.", scope="global")
    add(repo, "project/review.md", "mem_2025_06_01_001", "Runbook changes need an on-call review",
        "A change under `ops/runbooks/` waits for the on-call engineer's approval.")
    assert detect(repo) == {("mem_2024_12_02_001", "mem_2025_02_19_001"): "scope_overlap"}


def test_forbidding_a_piece_of_code_contradicts_a_memory_whose_point_uses_it(repo):
    from dmm.conflicts.analyzers.negation import _codes_forbidden

    assert _codes_forbidden("Do not emit `application/problem+json`") == [
        "application/problem+json"]
    assert _codes_forbidden("`npm install` is not allowed in CI") == ["npm install"]
    # the combining, a way of editing, a use against something: not the code itself
    assert _codes_forbidden("Relevance order cannot be combined with the `sort` parameter") == []
    assert _codes_forbidden("you never edit `.dmm/memory/` directly") == []
    assert _codes_forbidden("Then use `rabbitmqadmin` against the `/orders` vhost") == []
    # few words in common, one piece of code: forbidden by one, the other's point
    add(repo, "project/a.md", "mem_2024_02_27_001", "Error responses follow RFC 9457",
        "Every failed request is answered as `application/problem+json` with type, title and "
        "status. Handlers build it through one helper.", tags="[api]")
    add(repo, "project/b.md", "mem_2024_09_05_002", "Failures carry an error envelope",
        "The iOS client looks for a top-level error object with a code and a message. Do not "
        "emit `application/problem+json`: the SDK's decoder rejects that media type.",
        tags="[api]")
    # agrees with b: it forbids the same code in its own point
    add(repo, "project/c.md", "mem_2024_10_01_001", "The gateway rewrites error bodies",
        "Never send `application/problem+json` to mobile clients; the gateway converts it.",
        tags="[gateway]")
    assert detect(repo) == {("mem_2024_02_27_001", "mem_2024_09_05_002"): "contradictory"}
    conn, _ = open_fresh(repo.ws)
    (description,), = conn.execute("SELECT description FROM conflicts").fetchall()
    conn.close()
    # the evidence quotes the sentence that prescribes the code, not a title without it
    assert "Do not emit `application/problem+json`" in description
    assert "Every failed request is answered as `application/problem+json`" in description


def test_forbidding_one_action_does_not_contradict_another_action_on_the_same_thing(repo):
    add(repo, "agent/a.md", "mem_2025_04_10_001", "The agent never deletes remote branches",
        "Deleting a remote branch loses other people's work; leave it to the humans.",
        scope="agent", tags="[git, branches]")
    add(repo, "agent/b.md", "mem_2025_05_10_001", "Remote branches are named after the ticket",
        "A remote branch is called feature/ABC-123-short-summary so the tracker links it.",
        scope="agent", tags="[git, branches]")
    assert detect(repo) == {}


def test_code_wrapped_onto_the_next_line_is_one_piece_of_code():
    """A code span may wrap (markdown reads the line break as a space): its tokens are
    anchors, and a backtick after a blank line starts nothing."""
    from dmm.conflicts.anchors import anchors

    found = anchors("Regenerate them with `./gradlew\n:db:generateJooq` and compile again.", [])
    assert {"gradlew", "generatejooq"} <= found
    # unmatched backticks two paragraphs apart do not make the prose between them code
    assert "between" not in anchors("A stray ` here.\n\nwords between\n\nand ` there", [])


def test_the_same_code_and_values_in_two_languages_is_a_duplicate(repo):
    add(repo, "project/a.md", "mem_2025_06_10_001", "Health checks answer on /healthz",
        "Every service answers `GET /healthz` with `200` when ready and `503` while "
        "draining. The check must finish within `HEALTH_TIMEOUT_MS=500` and echo the "
        "`X-Request-ID` header; Kubernetes probes it every 10 seconds.", tags="[ops]")
    add(repo, "project/b.md", "mem_2026_01_12_001", "Gesundheitsprüfung unter /healthz",
        "Jeder Dienst beantwortet `GET /healthz` mit `200`, sobald er bereit ist, und mit "
        "`503` beim Herunterfahren. Die Prüfung endet innerhalb von `HEALTH_TIMEOUT_MS=500` "
        "und gibt den Header `X-Request-ID` zurück; Kubernetes fragt alle 10 Sekunden.",
        tags="[ops]")
    assert detect(repo) == {("mem_2025_06_10_001", "mem_2026_01_12_001"): "duplicate"}


def test_values_for_different_contexts_do_not_contradict(repo):
    add(repo, "project/a.md", "mem_2025_07_10_001", "Go services retry three times",
        "Outbound calls from Go services retry three times with jittered backoff.",
        tags="[go, retries]")
    add(repo, "project/b.md", "mem_2025_08_10_001", "Python services retry five times",
        "Outbound calls from Python services retry five times with jittered backoff.",
        tags="[python, retries]")
    add(repo, "project/c.md", "mem_2025_09_10_001", "Release 2.0 branches off on 3 March",
        "The release branch for 2.0 is cut on 3 March 2026.", tags="[releases]")
    add(repo, "project/d.md", "mem_2025_09_11_001", "Release 2.0 ships on 17 March",
        "Release 2.0 reaches customers on 17 March 2026.", tags="[releases]")
    assert detect(repo) == {}


def test_two_kinds_of_one_thing_that_a_memory_holds_apart_do_not_contradict(repo):
    add(repo, "project/a.md", "mem_2025_07_12_001", "Session cookies expire after 8 hours",
        "Session cookies set by the web app expire eight hours after login; a shorter life "
        "limits what a stolen laptop exposes.", tags="[auth, cookies, security]")
    add(repo, "project/b.md", "mem_2025_07_12_002", "Consent cookies are kept for 1 year",
        "The banner stores the answer in a consent cookie for a year. Unlike session cookies "
        "it holds no identifier.", tags="[privacy, cookies, security]")
    # the same two kinds, but no memory names both: "login cookies" may be session cookies
    add(repo, "project/c.md", "mem_2025_07_14_001", "Signing keys rotate every 90 days",
        "Signing keys for the API gateway rotate every ninety days.", tags="[keys, security]")
    add(repo, "project/d.md", "mem_2025_07_14_002", "Gateway keys rotate every 30 days",
        "Keys of the API gateway rotate every thirty days since the audit.",
        tags="[keys, security]")
    assert detect(repo) == {("mem_2025_07_14_001", "mem_2025_07_14_002"): "contradictory"}


def test_a_rule_that_overrides_the_general_one_on_purpose_is_an_exception(repo):
    add(repo, "project/a.md", "mem_2025_08_01_001", "HTTP clients time out after 10 seconds",
        "Every outbound HTTP client gives up after ten seconds and retries with backoff.",
        tags="[http, timeouts]")
    add(repo, "project/b.md", "mem_2025_08_02_001", "The export job waits up to 120 seconds",
        "Report exports can take two minutes to render, so the export job's HTTP client "
        "overrides the default timeout of outbound calls.", tags="[http, timeouts, exports]")
    add(repo, "project/c.md", "mem_2025_08_03_001", "HTTP clients time out after 30 seconds",
        "Every outbound HTTP client gives up after thirty seconds.", tags="[http, timeouts]")
    # the export job knows the general rule and departs from it; the two general rules clash
    assert detect(repo) == {("mem_2025_08_01_001", "mem_2025_08_03_001"): "contradictory"}


def test_two_values_are_compared_only_when_said_about_two_shared_words(repo):
    add(repo, "project/a.md", "mem_2025_08_05_001", "Deleted invoices are purged after 30 days",
        "Deleting an invoice only marks its row; a nightly task removes rows older than 30 days. "
        "Support can restore one from the admin page until then.", tags="[invoices]")
    add(repo, "project/b.md", "mem_2025_08_06_001", "Exchange rates live in the rates table",
        "Each currency pair is one row of the rates table, and the service caches the table for "
        "60 seconds. Support edits rates on the admin page.", tags="[currency]")
    # "row" is all the two sentences share: a purge delay and a cache lifetime are two things
    assert detect(repo) == {}


def test_kinds_are_read_from_the_subject_a_title_opens_with():
    from dmm.conflicts.compounds import compounds, subject_compound

    assert subject_compound("The refresh tokens last 30 days") == ("refresh", "token")
    assert subject_compound("How to rotate signing keys") is None  # a question
    assert ("15", "minut") not in compounds("valid for 15 minutes")  # a value, not a kind
    assert ("access", "token") in compounds("a new access\ntoken")  # wrapped at 80 columns
    assert ("session", "cooki") not in compounds("the session. Cookies")


def test_named_contexts_are_whole_words():
    from dmm.conflicts.contexts import apart, named_contexts

    python, yaml = named_contexts("Python files", []), named_contexts("Manifests", ["yaml"])
    assert apart(python, yaml) == "language"
    assert named_contexts("Product pages are cached", []) == {}  # "product" is not production
    assert apart(named_contexts("Prod database", []), named_contexts("production", [])) is None
    assert apart(python, named_contexts("Timeouts", [])) is None  # one side names none
    # a prefixed compound names another context
    assert named_contexts("Pre-production builds are promoted by hand", []) == {}
    assert named_contexts("Non-production data", ["ci"]) == {"environment": {"ci"}}


def test_a_change_to_pre_production_leaves_production_alone(repo):
    add(repo, "project/prod.md", "mem_2024_08_01_001",
        "Production releases are a reviewed PR plus a manual Flux reconcile",
        "Open a PR that pins the image tag of the production overlay, get two approvals, then "
        "run the Flux reconcile by hand. Automated reconcile is switched off for production.",
        tags="[deploy, production]")
    add(repo, "project/preprod.md", "mem_2025_03_26_001",
        "A person picks the build that goes onto pre-production",
        "The Flux kustomization of the pre-production environment has its automated reconcile "
        "switched off; someone runs the promote workflow by hand with a commit SHA.",
        tags="[deploy, qa]")
    assert detect(repo) == {}


def test_a_day_of_the_month_is_no_count():
    from dmm.conflicts.quantities import quantities

    assert [q.dimension for q in quantities("cut on 14 August with 3 reviewers")] == [
        "count:review"]


def test_different_answers_to_one_question_contradict(repo):
    # no shared words, no numbers, no "not": scrypt and PBKDF2 both answer "how are
    # passwords stored", which the family names by itself
    add(repo, "project/a.md", "mem_2025_02_12_001", "Passphrases are derived with scrypt",
        "Each passphrase goes through scrypt (N=2^15, r=8) before it is written.",
        tags="[security]")
    add(repo, "project/b.md", "mem_2025_10_12_001", "Account secrets go through PBKDF2",
        "Sign-in checks recompute PBKDF2-HMAC-SHA256 with 600,000 rounds.", tags="[auth]")
    # naming both is a migration story, not a third answer
    add(repo, "project/c.md", "mem_2025_11_12_001", "Legacy digests move from bcrypt to scrypt",
        "On the next sign-in every bcrypt digest is replaced by a scrypt one.",
        tags="[migrations]")
    # a family that needs a shared subject: kebab-case vs snake_case config keys contradict,
    # snake_case columns and kebab-case URL paths are different things
    add(repo, "project/d.md", "mem_2025_03_12_001", "Config keys are written in kebab-case",
        "Keys in settings files read like max-connections.", tags="[config]")
    add(repo, "project/e.md", "mem_2025_04_12_001", "Config keys use snake_case",
        "Settings files spell keys like max_connections.", tags="[config]")
    add(repo, "project/f.md", "mem_2025_05_12_001", "Database columns are snake_case",
        "Columns read like created_at.", tags="[database]")
    add(repo, "project/g.md", "mem_2025_06_12_001", "URL paths are kebab-case",
        "Paths read like /order-lines.", tags="[http]")
    assert detect(repo) == {
        ("mem_2025_02_12_001", "mem_2025_10_12_001"): "contradictory",
        ("mem_2025_03_12_001", "mem_2025_04_12_001"): "contradictory",
    }


def test_a_memory_that_also_endorses_the_other_answer_does_not_contradict(repo):
    add(repo, "project/a.md", "mem_2025_02_13_001", "Timestamps are stored in UTC",
        "Every timestamp column holds UTC values.", tags="[timestamps, database]")
    add(repo, "project/b.md", "mem_2025_03_13_001", "Reports show local time",
        "Reports convert the stored UTC values to local time for readers.",
        tags="[timestamps, reports]")
    add(repo, "project/c.md", "mem_2025_04_13_001", "Audit times are written in local time",
        "Audit rows hold local time; UTC is not used there.", tags="[timestamps, audit]")
    assert detect(repo) == {("mem_2025_02_13_001", "mem_2025_04_13_001"): "contradictory"}


@pytest.mark.parametrize("older, newer", [
    # another answer of a family that names its subject
    (("Crashes are reported to Rollbar", "Unhandled exceptions reach Rollbar with the release "
      "tag.", "[errors]"),
     ("Bugsnag receives every failure", "The mobile and web clients send failures to Bugsnag.",
      "[monitoring]")),
    # another answer to a question both titles ask, in two languages
    (("Collection endpoints paginate with cursors", "Every list returns next_cursor; offsets "
      "are rejected.", "[http]"),
     ("列表接口统一使用 page / page_size 分页", "所有返回集合的接口都通过这两个查询参数来分页。",
      "[前端]")),
], ids=["names its subject", "asks its question"])
def test_an_incremental_scan_compares_other_answers_that_share_no_words(repo, older, newer):
    add(repo, "project/a.md", "mem_2025_02_14_001", older[0], older[1], tags=older[2])
    for n in range(2, 8):
        add(repo, f"project/x{n}.md", f"mem_2025_02_14_00{n}", f"Unrelated rule {n}",
            f"Something else entirely, number {n}.")
    add(repo, "project/b.md", "mem_2025_09_14_001", newer[0], newer[1], tags=newer[2])
    assert detect_incremental(repo, "mem_2025_09_14_001") == [
        ("mem_2025_02_14_001", "mem_2025_09_14_001", "contradictory")]


def test_two_people_named_for_the_same_role_contradict(repo):
    add(repo, "project/a.md", "mem_2025_03_15_001",
        "Mara Lind approves changes to the billing schema", "Migrations that touch invoices or credit notes wait for her approval.",
        tags="[ownership]")
    add(repo, "project/b.md", "mem_2026_01_15_001", "The billing schema is owned by Oskar Berg",
        "He signs off every migration of the billing tables before it is merged.",
        tags="[ownership]")
    # the same person pattern about another subject is no disagreement
    add(repo, "project/c.md", "mem_2025_04_15_001", "Ines Vogt owns the search cluster",
        "Index mappings and shard counts are her call.", tags="[ownership]")
    # names with a digit are numbers of documents, not people
    add(repo, "project/d.md", "mem_2025_05_15_001", "ADR017 places the build runners",
        "Runners live in the shared build account.", tags="[adr]")
    add(repo, "project/e.md", "mem_2025_06_15_001", "ADR021 places the build runners per region",
        "Every region gets a runner pool of its own.", tags="[adr]")
    assert detect(repo) == {("mem_2025_03_15_001", "mem_2026_01_15_001"): "contradictory"}


def test_a_name_at_the_start_of_a_wrapped_line_is_still_a_name():
    from dmm.conflicts.names import proper_names

    text = ("The staff app is maintained by the contractor team at\nNordwave since June.\n\n"
            "Since then nothing changed.\n- Reviews happen weekly.\n1. Builds run nightly.")
    assert proper_names(text) == {"nordwave", "june"}


def test_titles_stating_different_values_contradict_whatever_details_agree(repo):
    # the bodies share a detail (one tester ran the smoke suite), the titles disagree
    add(repo, "project/a.md", "mem_2025_05_16_001",
        "Production releases need two testers' approval", "Two testers approve every production release, and one tester must have run the smoke "
        "suite first.", tags="[releases]")
    add(repo, "project/b.md", "mem_2026_01_16_001",
        "One tester's approval is enough for production releases", "Since the team shrank, a release goes out as soon as somebody from QA says yes.",
        tags="[qa]")
    assert detect(repo) == {("mem_2025_05_16_001", "mem_2026_01_16_001"): "contradictory"}


def test_two_titles_asking_one_question_in_other_words_are_about_the_same_thing(repo):
    # "money" and "invoice amounts" share no word, but both name what the family answers
    add(repo, "project/a.md", "mem_2025_02_15_001", "Money is kept as integer cents",
        "Ledger rows hold a count of cents and an ISO currency code.", tags="[ledger]")
    add(repo, "project/b.md", "mem_2025_09_15_001", "Invoice amounts are decimals with scale 4",
        "The invoicing service computes each total with four fraction digits.",
        tags="[invoices]")
    # the same answer to that question in two files is one rule written twice
    add(repo, "project/c.md", "mem_2025_10_15_001",
        "Prices are persisted as whole numbers of the smallest currency unit",
        "Catalogue rows count the subdivision of the currency, never a fraction.",
        tags="[catalogue]")
    # "decimals" answers nothing where no title asks about money
    add(repo, "project/d.md", "mem_2025_11_15_001", "Sensor readings are decimals",
        "Each reading keeps three fraction digits.", tags="[sensors]")
    assert detect(repo) == {
        ("mem_2025_02_15_001", "mem_2025_09_15_001"): "contradictory",
        ("mem_2025_02_15_001", "mem_2025_10_15_001"): "duplicate",
        ("mem_2025_09_15_001", "mem_2025_10_15_001"): "contradictory",
    }


def test_a_rule_forbidding_what_another_prescribes_in_other_words_contradicts_it(repo):
    # "cap processor time" is "a CPU limit" in other words (synonyms.py); the two texts share
    # little else, so the two titles' own words decide
    add(repo, "project/a.md", "mem_2025_03_17_001", "Every container must declare a CPU limit",
        "The admission policy rejects manifests without resources.limits.cpu, so one runaway "
        "pod cannot starve its neighbours of CPU time.", tags="[kubernetes]")
    add(repo, "project/b.md", "mem_2026_01_17_001", "Don't cap processor time on our containers",
        "Quota throttling showed up as latency spikes while nodes sat idle; manifests carry "
        "requests only.", tags="[latency]")
    # the same cue about another thing: uploads are no processor
    add(repo, "project/c.md", "mem_2026_02_17_001", "Don't cap upload sizes on the web tier",
        "Large files stream straight to object storage.", tags="[uploads]")
    # a body sentence in other words: "no inactivity expiry" against "end after 15 idle
    # minutes"
    add(repo, "project/d.md", "mem_2025_04_17_001", "Admin console sessions end after 15 idle "
        "minutes", "Staff sessions in the console are terminated after fifteen minutes without "
        "a request; this timeout is a SOC 2 control.", tags="[admin]")
    add(repo, "project/e.md", "mem_2026_03_17_001", "Back-office logins persist until the "
        "person signs out", "Support staff lose notes when thrown out of the admin console, "
        "so staff sessions carry no inactivity expiry.", tags="[support]")
    assert detect(repo) == {
        ("mem_2025_03_17_001", "mem_2026_01_17_001"): "contradictory",
        ("mem_2025_04_17_001", "mem_2026_03_17_001"): "contradictory",
    }


def test_synonyms_widen_stems_by_their_group():
    from dmm.conflicts.synonyms import widen
    from dmm.text.analyze import terms

    assert set(terms("processor cap")) <= widen(terms("CPU limit"))
    assert "stage" not in widen(terms("production"))  # neighbours, opposites: not synonyms
    assert widen(set()) == set()


def test_among_tells_what_widen_would_hold():
    from dmm.conflicts.synonyms import GROUPS, among, widen
    from dmm.conflicts.vectors import TermVector
    from dmm.text.analyze import terms

    words = {t for line in GROUPS for t in terms(line)} | set(terms("stage deploy token"))
    for text in ("CPU limit", "the repo config", "stage deploy", ""):
        found = set(terms(text))
        vector = TermVector.of(dict.fromkeys(found, 1.0))  # a memory's terms, as scans hold them
        for t in words:
            assert among(t, found) == among(t, vector) == (t in widen(found)), (text, t)
    assert among("processor", set(terms("CPU limit")))
    assert not among("stage", set(terms("production")))


def test_a_count_in_other_words_is_the_same_count(repo):
    # seats and members count the same people on a plan (synonyms.py)
    add(repo, "project/a.md", "mem_2025_05_18_001", "Starter plan includes 2 seats",
        "A workspace on the starter plan can have at most two seats; invitations count.",
        tags="[billing]")
    add(repo, "project/b.md", "mem_2026_01_18_001", "Starter workspaces can have four members",
        "Marketing promises four people on the starter plan, owner included.",
        tags="[marketing]")
    # projects are another count of the same plan
    add(repo, "project/c.md", "mem_2026_02_18_001", "Starter workspaces can hold ten projects",
        "Archived projects do not count towards the ten.", tags="[limits]")
    assert detect(repo) == {("mem_2025_05_18_001", "mem_2026_01_18_001"): "contradictory"}


def _invoice_events(repo):
    add(repo, "project/a.md", "mem_2024_02_19_001", "Invoice events flow through NATS",
        "The billing service publishes to the `billing-js` stream; failures land in "
        "`invoices.dlq` after three attempts.", tags="[messaging]")
    add(repo, "project/b.md", "mem_2025_03_19_001", "Invoice events migrated to Kafka",
        "Invoice events now go to the `invoice-events` topic; the NATS cluster was shut down.",
        tags="[messaging]")
    # written after the migration, from the old procedure: it relies on what the change left
    add(repo, "project/c.md", "mem_2026_01_19_001", "Replaying failed invoice events",
        "Move messages from `invoices.dlq` back onto `billing-js` in small batches.",
        tags="[runbook]")
    # written for the new system: nothing left behind
    add(repo, "project/d.md", "mem_2026_02_19_001", "Consumers of invoice events commit offsets",
        "Each consumer of `invoice-events` commits its offset after its transaction.",
        tags="[messaging]")


def test_a_memory_relying_on_what_a_change_left_behind_is_stale(repo):
    _invoice_events(repo)
    found = detect(repo)
    assert found[("mem_2024_02_19_001", "mem_2025_03_19_001")] == "stale"
    assert found[("mem_2025_03_19_001", "mem_2026_01_19_001")] == "stale"
    assert not any("mem_2026_02_19_001" in pair for pair in found)


def test_an_incremental_scan_of_the_relying_memory_finds_the_change(repo):
    _invoice_events(repo)
    assert detect_incremental(repo, "mem_2026_01_19_001") == [
        ("mem_2025_03_19_001", "mem_2026_01_19_001", "stale")]


def test_two_people_holding_one_role_contradict(repo):
    add(repo, "project/a.md", "mem_2024_06_20_001", "Route erasure requests to Ines Duarte",
        "Ines Duarte is our appointed Data Protection Officer. Forward every access or erasure "
        "request to her within two days.", tags="[compliance]")
    add(repo, "project/b.md", "mem_2024_11_20_001", "Karl Weber answers privacy questions",
        "The person named as DPO in our privacy policy is Karl Weber. Assign access and "
        "erasure requests to him; he replies within two working days.", tags="[support]")
    # a role of something else, qualified: not the same role
    add(repo, "project/c.md", "mem_2025_01_20_001", "Mobile releases are cut on Tuesdays",
        "Lena Fischer acts as the release manager for mobile; privacy reviews go to legal.",
        tags="[mobile]")
    assert detect(repo) == {("mem_2024_06_20_001", "mem_2024_11_20_001"): "contradictory"}


def test_role_holders_are_read_from_what_a_memory_says():
    from dmm.conflicts.names import holders

    assert holders("Marta Ruiz is our appointed Data Protection Officer.")["dpo"] == (
        "Marta Ruiz", "Data Protection Officer")
    assert holders("The person named as DPO in our policy is Tomasz\nNowak.")["dpo"] == (
        "Tomasz Nowak", "DPO")
    assert holders("Jane Doe is the owner of the billing job.") == {}  # owner of what: bound
    assert holders("Jane Doe is the owner.") == {}  # a bare role names nothing


def test_values_both_titles_state_are_compared_however_little_else_is_shared(repo):
    # two wordings of one ceiling, little alike (cosine below value_similarity): each title
    # states its value, and the sentences saying it share words besides the values' own
    # ("avatar", "users", "upload"; not "MB" or "bytes")
    add(repo, "project/a.md", "mem_2024_08_21_001", "Profile photo uploads are capped at 8 MB",
        "`PUT /users/{id}/avatar` accepts a picture upload of up to 8 MB; we shrink it to 256 "
        "px variants ourselves, so phones may send camera originals.", tags="[api]")
    add(repo, "project/b.md", "mem_2025_01_21_001",
        "Avatar route refuses request bodies above 2,097,152 bytes",
        "The ingress in front of the users service limits avatar uploads to 2097152 bytes, "
        "and the application enforces the same number for every avatar upload.",
        tags="[ingress]")
    # another title's value, said about other things: no shared subject, no comparison
    add(repo, "project/c.md", "mem_2025_02_21_001", "Export files are capped at 50 MB",
        "Nightly exports for finance stay under 50 MB.", tags="[exports]")
    assert detect(repo) == {("mem_2024_08_21_001", "mem_2025_01_21_001"): "contradictory"}


def test_decision_records_numbered_in_their_titles_are_no_contradiction(repo):
    add(repo, "project/adr39.md", "mem_2025_03_01_039", "ADR 39: Deploy the API with Helm",
        "Status: accepted. We deploy the API service to the cluster with Helm charts kept in "
        "the deploy repository; each environment has its own values file.")
    add(repo, "project/adr10.md", "mem_2024_02_01_010", "ADR 10: Deploy the workers with Helm",
        "Status: accepted. We deploy the background workers to the cluster with Helm charts "
        "kept in the deploy repository; each environment has its own values file.")
    assert not any(t == "contradiction" for t in detect(repo).values())
