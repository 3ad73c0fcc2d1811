"""One way to name a memory, a time and a set of memories, on every command: ids or paths
(relative to .dmm/memory/, to the repository root or to the current folder, new files
included), one history per memory whatever its name, a path that names nothing is an error.
Real repositories, the real CLI."""

from __future__ import annotations

import json

from dmm.errors import ExitCode
from tests.conflicts.test_resolution import NEW_LIMIT, OLD_LIMIT, cid, resolve
from tests.conflicts.test_resolution import store  # noqa: F401 - a fixture
from tests.conftest import git, run_dmm

BODY = "Every public endpoint carries its major version in the URL, such as /v1/orders.\n"


def log(repo, *args, cwd=None) -> list[dict]:
    proc = run_dmm("log", "--json", *args, cwd=cwd or repo.root)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["entries"]


def test_one_memory_has_one_history_whatever_its_name(store):  # noqa: F811
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    resolve(store, conflict, "--action", "deprecate", "--target", OLD_LIMIT, "--reason", "newer")
    assert store.dmm("conflicts", "undo", conflict, "--reason", "wrong one").returncode == 0
    by_id = log(store, "--memory", OLD_LIMIT)
    assert [e["event"] for e in by_id] == ["resolved:undo", "resolved:deprecate"]
    for name in ("project/limit_old.md", ".dmm/memory/project/limit_old.md"):
        assert log(store, "--memory", name) == by_id, name
    assert log(store, "--path", "project/limit_old.md") == by_id  # the old spelling
    # an undo names the memories of the resolution it reverts (the change column)
    undo = by_id[0]
    assert sorted(undo["memory_ids"]) == sorted([OLD_LIMIT, NEW_LIMIT])
    table = store.dmm("log", "--memory", OLD_LIMIT).stdout
    undo_row = next(line for line in table.splitlines() if "resolved:undo" in line)
    assert OLD_LIMIT in undo_row
    # a proposal's decisions come with it, by id or by path
    made = json.loads(store.dmm("write", "update", "--memory", NEW_LIMIT, "--reason", "r",
                                "--json", input=(store.memory / "project/limit_new.md")
                                .read_text() + "\nMeasured at the edge.\n").stdout)
    assert store.dmm("review", "defer", made["proposal_id"], "--reason", "ask").returncode == 0
    for name in (NEW_LIMIT, "project/limit_new.md"):
        events = [e["event"] for e in log(store, "--memory", name)]
        assert events[:2] == ["deferred", "proposed"], (name, events)
    for wrong in ("mem_1999_01_01_001", "project/nope.md"):
        proc = store.dmm("log", "--memory", wrong)
        assert proc.returncode == ExitCode.NOT_FOUND and "no memory" in proc.stderr, wrong


def test_a_path_is_taken_from_where_the_user_stands(store):  # noqa: F811
    folder = store.memory / "project" / "jobs"
    proc = run_dmm("write", "propose", "--path", "versioning.md", "--reason", "r", "--title",
                   "APIs are versioned in the URL", "--tags", "api", "--json",
                   cwd=folder, input=BODY)
    made = json.loads(proc.stdout)
    assert made["success"], made
    assert made["path"] == "project/jobs/versioning.md"
    src = store.root / "src"
    src.mkdir()
    proc = run_dmm("write", "propose", "--path", "../.dmm/memory/project/paging.md", "--reason",
                   "r", "--title", "Lists are paged with cursors", "--tags", "api", "--json",
                   cwd=src, input=BODY)
    assert json.loads(proc.stdout)["path"] == "project/paging.md", proc.stdout
    proc = run_dmm("write", "propose", "--path", "./dot.md", "--reason", "r", "--title",
                   "Dot paths are relative to here", "--tags", "api", "--json", cwd=folder,
                   input=BODY)
    assert json.loads(proc.stdout)["path"] == "project/jobs/dot.md"
    # a path outside any scope folder is said as such, not as a missing field
    proc = store.dmm("write", "propose", "--path", "loose.md", "--reason", "r", "--title",
                     "Loose", "--tags", "x", input=BODY)
    assert proc.returncode == ExitCode.INVALID_INPUT and "not in a scope folder" in proc.stderr
    assert "scope' is missing" not in proc.stderr
    # list --under takes the same paths
    under = [json.loads(store.dmm("list", "--under", p, "--json").stdout)["total"]
             for p in ("project/jobs", ".dmm/memory/project/jobs")]
    assert under[0] == under[1] == 2
    here = run_dmm("list", "--under", ".", "--json", cwd=folder)
    assert json.loads(here.stdout)["total"] == 2


def test_validate_of_a_path_that_names_nothing_fails(store):  # noqa: F811
    proc = store.dmm("validate", "nonexistent.md")
    assert proc.returncode == ExitCode.NOT_FOUND and "nonexistent.md" in proc.stderr
    one = store.dmm("validate", "project/limit_old.md")
    assert one.returncode == 0 and "1 file checked: 0 errors, 0 warnings" in one.stderr
    folder = store.dmm("validate", ".dmm/memory/project/jobs")
    assert "2 files checked" in folder.stderr


def test_memories_are_named_with_memory_everywhere_old_spellings_still_work(store):  # noqa: F811
    for args in (("--memory", OLD_LIMIT, "--memory", NEW_LIMIT),
                 ("--memory", f"{OLD_LIMIT},{NEW_LIMIT}"),
                 ("--memories", f"{OLD_LIMIT},{NEW_LIMIT}")):
        proc = store.dmm("conflicts", "check", *args, "--no-headers")
        assert proc.returncode == 1 and "\t" in proc.stdout, (args, proc.stderr)
    proc = store.dmm("write", "deprecate", "--memory", "project/limit_old.md", "--reason", "r",
                     "--json")
    assert json.loads(proc.stdout)["success"], proc.stdout
    help_text = store.dmm("write", "update", "--help").stdout
    assert "--memory" in help_text and "--path" not in help_text  # the old one is hidden


def test_time_filters_take_days_or_a_date(store):  # noqa: F811
    store.add("project/old.md", "mem_2020_01_01_001", "An old rule about uploads",
              extra="created: 2020-01-01\n")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "old")
    by_days = json.loads(store.dmm("list", "--older-than", "1000", "--json").stdout)
    by_date = json.loads(store.dmm("list", "--older-than", "2021-01-01", "--json").stdout)
    assert [m["memory_id"] for m in by_days["memories"]] == ["mem_2020_01_01_001"]
    assert by_date == by_days
    bad = store.dmm("list", "--older-than", "last year")
    assert bad.returncode == ExitCode.USAGE and "neither a number of days nor a date" in \
        bad.stderr
    assert store.dmm("usage", "queries", "--newer-than", "2020-01-01").returncode == 0
    assert store.dmm("usage", "stale", "--older-than", "30").returncode == 0
    assert store.dmm("usage", "stale", "--days", "30").returncode == 0  # old spelling


def test_tags_and_order_say_the_same_thing_everywhere(store):  # noqa: F811
    both = json.loads(store.dmm("query", "upload size ceiling", "--tag", "uploads", "--tag",
                                "limits", "--json").stdout)
    assert {m["memory_id"] for m in both["retrieved"]} == {OLD_LIMIT, NEW_LIMIT}
    none = json.loads(store.dmm("query", "upload size ceiling", "--tag", "uploads,queue",
                                "--json").stdout)
    assert none["retrieved"] == []  # every tag, as `list --tag` takes them
    listed = json.loads(store.dmm("list", "--tag", "uploads,queue", "--json").stdout)
    assert listed["total"] == 0
    anyof = json.loads(store.dmm("query", "upload size ceiling", "--tags", "uploads,queue",
                                 "--json").stdout)
    assert {m["memory_id"] for m in anyof["retrieved"]} >= {OLD_LIMIT, NEW_LIMIT}  # old: any
    for args in (("conflicts", "list", "--status", "all"), ("review", "list", "--status", "all"),
                 ("list",)):
        assert store.dmm(*args, "--sort", store.dmm(*args, "--help").stdout.split(
            "--sort [")[1].split("|")[0], "--reverse").returncode == 0, args
    forward = store.dmm("conflicts", "list", "--sort", "conflict", "--no-headers").stdout
    backward = store.dmm("conflicts", "list", "--sort", "conflict", "--reverse",
                         "--no-headers").stdout
    assert forward.splitlines() == list(reversed(backward.splitlines())) and forward
