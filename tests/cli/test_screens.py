"""What a person sees on a real terminal (a pseudo-terminal of a given width): every table fits
and keeps its ids and titles, long output goes through the pager ($PAGER replaced by a
program that records what it was given), colour can be forced or refused. Real repositories,
the real CLI."""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

from dmm.cli.tables import Col, fit
from tests.cli.test_output import LONG, on_terminal, propose
from tests.conflicts.test_resolution import NEW_LIMIT, OLD_LIMIT, cid, resolve
from tests.conflicts.test_resolution import store  # noqa: F401 - a fixture
from tests.conftest import git

pexpect = pytest.importorskip("pexpect")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def lines_of(text: str) -> list[str]:
    return [ANSI.sub("", line) for line in text.splitlines() if line.strip()]


@pytest.fixture
def busy(store):  # noqa: F811
    """A store with a conflict resolved and undone, an approved and a rejected proposal."""
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    resolve(store, conflict, "--action", "deprecate", "--target", OLD_LIMIT, "--reason",
            "the newer ceiling replaced the old one after the gateway upgrade in January")
    assert store.dmm("conflicts", "undo", conflict, "--reason", "deprecated the wrong "
                     "one").returncode == 0
    for verdict in ("approve", "reject"):
        pid = propose(store) if verdict == "approve" else _other(store)
        assert store.dmm("review", verdict, pid, "--reason", "decided in the weekly review "
                         "with the whole team present").returncode == 0
    store.add("project/payments/retry.md", "mem_2026_02_01_001", LONG, tags="[payments]")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "a long title")
    return store


def _other(repo) -> str:
    proc = repo.dmm("write", "propose", "--path", "project/ops/oncall_rotation_weekly.md",
                    "--reason", "r", "--title", "The on-call rotation changes every Monday",
                    "--tags", "ops", "--json", input="The rotation hands over on Mondays at "
                    "10:00 so that the weekend is covered by one person.\n")
    return json.loads(proc.stdout)["proposal_id"]


TABLES = [("list",), ("conflicts", "list", "--status", "all"),
          ("conflicts", "check", "--memories", f"{OLD_LIMIT},{NEW_LIMIT}"),
          ("history", NEW_LIMIT), ("review", "list", "--status", "closed"), ("log",),
          ("usage", "queries")]


@pytest.mark.parametrize("columns", [80, 120])
def test_every_table_fits_the_terminal_and_keeps_ids_and_titles(busy, columns):
    busy.dmm("query", "upload size ceiling of the gateway for multipart bodies and JSON")
    for args in TABLES:
        shown = lines_of(on_terminal(busy, *args, columns=columns, env={"PAGER": "cat"}))
        table = shown[:next((i for i, x in enumerate(shown) if x.startswith("...")),
                            len(shown))]
        assert len(table) >= 3, (args, shown)
        assert all(len(line) <= columns for line in table), \
            (args, columns, [(len(x), x) for x in table if len(x) > columns])
        piped = busy.dmm(*args, "--no-headers").stdout.splitlines()
        first = piped[0].split("\t")[0]
        # the identifying column is whole on the terminal
        assert any(line.startswith(first[:7]) for line in table[2:]), (args, first, table)
    listed = lines_of(on_terminal(busy, "list", columns=80))
    row = next(line for line in listed if line.startswith("mem_2026_02_01_001"))
    title = re.search(r"Outbound HTTP[^…]*…?", row).group(0)
    assert len(title) >= 25, row  # the title got room before the other columns did
    assert "retry.md" in row  # the path's file name stays (its start is cut)


def test_a_table_drops_columns_by_priority_and_gives_room_back_to_the_title():
    rows = [("mem_1", "project", "active", "2026-01-01", 0.5, 120, "A" * 60, "project/a.md")]
    cols = [Col("id", "id"), Col("scope", drop=4), Col("status", drop=1),
            Col("created", drop=5), Col("priority", drop=2), Col("tokens", drop=3),
            Col("title", "title"), Col("path", "path", min=20)]
    shown, cut = fit(rows, cols, 80)
    assert [cols[i].name for i in shown][:1] == ["id"] and 6 in shown and 7 in shown
    assert 2 not in shown  # status goes first
    width = sum(max(len(cols[i].name) + 2, len(str(c))) for i, c in zip(shown, cut[0]))
    assert width + 2 * (len(shown) - 1) <= 80
    wide_shown, wide = fit(rows, cols, 200)
    assert wide_shown == list(range(8)) and wide[0][6] == "A" * 60


def _fake_pager(tmp_path) -> tuple[str, object]:
    record = tmp_path / "paged.txt"
    script = tmp_path / "pager.py"
    script.write_text(f"import sys\nopen({str(record)!r}, 'w').write(sys.stdin.read())\n")
    return f"{sys.executable} {script}", record


def test_long_output_goes_through_the_pager_and_no_pager_turns_it_off(busy, tmp_path):
    pager, record = _fake_pager(tmp_path)
    for i in range(40):
        busy.add(f"project/many/m{i:02}.md", f"mem_2026_03_01_{i:03}", f"Rule number {i}")
    git(busy.root, "add", "-A")
    git(busy.root, "commit", "-qm", "many")
    shown = on_terminal(busy, "list", columns=100, env={"PAGER": pager})
    assert record.exists(), shown
    paged = record.read_text()
    assert "mem_2026_03_01_039" in paged and "mem_2026_03_01_039" not in shown
    assert paged.endswith("\n") and not paged.endswith("\n\n")  # as git's pager: no blank
    record.unlink()
    for args in (("--no-pager", "list"), ("list", "--no-pager")):
        shown = on_terminal(busy, *args, columns=100, env={"PAGER": pager})
        assert not record.exists() and "mem_2026_03_01_039" in shown
    # DMM_PAGER wins over PAGER; piped output is never paged
    on_terminal(busy, "log", columns=60, env={"PAGER": "false", "DMM_PAGER": pager})
    assert "resolved:undo" in record.read_text()
    record.unlink()
    assert "mem_2026_03_01_039" in busy.dmm("list", env={"PAGER": pager}).stdout
    assert not record.exists()
    # a diff too long for the screen
    pid = json.loads(busy.dmm("review", "list", "--json", "--status", "closed").stdout
                     )["proposals"][0]["proposal_id"]
    on_terminal(busy, "review", "show", pid, columns=100, env={"PAGER": pager, "LINES": "5"})
    assert "+# " in record.read_text()


def test_colour_is_forced_or_refused_as_asked(busy):
    piped = busy.dmm("conflicts", "list", "--status", "all")
    assert "\x1b[" not in piped.stdout
    for how in ({"args": ("--color=always",)}, {"env": {"FORCE_COLOR": "1"}},
                {"env": {"CLICOLOR_FORCE": "1"}}):
        proc = busy.dmm(*how.get("args", ()), "conflicts", "list", "--status", "all",
                        env=how.get("env"))
        assert "\x1b[" in proc.stdout, how
    on_tty = on_terminal(busy, "conflicts", "list", "--status", "all", "--color", "never",
                         columns=160)
    assert "\x1b[" not in on_tty
    assert "\x1b[" not in on_terminal(busy, "conflicts", "list", "--status", "all",
                                      columns=160, env={"NO_COLOR": "1", "FORCE_COLOR": "1"})
    # forced colour never lets memory text drive the terminal
    busy.add("project/sneaky.md", "mem_2026_04_01_001", "Deploys need a second reviewer",
             "Every deploy needs a second reviewer.\x1b[8m hidden\x1b[0m")
    shown = busy.dmm("--color=always", "show", "mem_2026_04_01_001").stdout
    assert "\x1b[8m" not in shown and "hidden" in shown


def test_a_mistyped_command_gets_suggestions(repo):
    proc = repo.dmm("lst")
    assert proc.returncode == 2 and "Did you mean 'list'" in proc.stderr
    proc = repo.dmm("conflict", "list")
    assert "Did you mean 'conflicts'" in proc.stderr


def test_a_full_scan_shows_progress_on_a_terminal_and_nothing_when_piped(repo):
    for i in range(220):  # enough memories for the bar (tiny stores get none)
        repo.add(f"project/rules/r{i:03}.md", f"mem_2026_05_01_{i:03}",
                 f"Rule {i} about service number {i}",
                 f"Service {i} retries {i % 7 + 1} times before it gives up on a call.")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "many")
    assert repo.dmm("reindex").returncode == 0
    shown = on_terminal(repo, "conflicts", "scan", "--full", columns=100)
    assert "scanning for conflicts" in shown and "100%" in shown, shown
    piped = repo.dmm("conflicts", "scan", "--full")
    assert piped.returncode == 0 and "scanning for conflicts" not in piped.stderr
    assert "%" not in piped.stderr


def test_at_80_columns_the_tables_keep_what_a_reader_needs(busy):
    """conflicts list --status all keeps the status, log the proposal or conflict, list the
    scope and a path's first folder with its file name (issue 37 item 20)."""
    conflicts = lines_of(on_terminal(busy, "conflicts", "list", "--status", "all", columns=80))
    assert "status" in conflicts[0].split(), conflicts
    log = lines_of(on_terminal(busy, "log", columns=80, env={"PAGER": "cat"}))
    assert "proposal or conflict" in log[0], log
    assert any("prop_" in line for line in log[2:]) and any("conflict_" in line
                                                             for line in log[2:]), log
    listed = lines_of(on_terminal(busy, "list", columns=80, env={"PAGER": "cat"}))
    assert "scope" in listed[0].split(), listed
    row = next(line for line in listed if line.startswith("mem_2026_02_01_001"))
    assert re.search(r"project/\S*…\S*/retry\.md|project/payments/retry\.md", row), row
