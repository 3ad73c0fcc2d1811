"""The fast layout of plain tables (dmm/cli/terminal.py ``_simple``) is tabulate's "simple"
format byte for byte; anything else is left to tabulate."""

from __future__ import annotations

import random

from tabulate import tabulate

from dmm.cli.terminal import _simple, table


def _tabulated(rows, names, words):
    return tabulate(rows, headers=names, tablefmt="simple", numalign="right",
                    disable_numparse=words, floatfmt=".2f")


def _random_table(rng: random.Random):
    kinds = [rng.choice(["word", "int", "float", "mixed"]) for _ in range(rng.randint(1, 6))]
    names = [rng.choice(["id", "a", "priority", "a much longer header", "tokens"])
             for _ in kinds]
    rows = []
    for _ in range(rng.randint(1, 30)):
        row = []
        for kind in kinds:
            if kind == "word":
                row.append(rng.choice(["", "x", "mem_2026_01_01_0001", "0017", "1e3",
                                       "a title with spaces", "-5", "project/api/x.md"]))
            elif kind == "int":
                row.append(rng.choice([0, 7, -12, 123456789]))
            elif kind == "float":
                row.append(rng.choice([0.5, -0.25, 1.0, 3.14159, 1234.5]))
            else:
                row.append(rng.choice([1, 0.75, -3, 2.5]))
        rows.append(tuple(row))
    words = [k for k in range(len(names))
             if not rows or not all(isinstance(r[k], (int, float)) for r in rows)]
    return rows, names, words


def test_the_fast_layout_is_tabulates_simple_format():
    rng = random.Random(5)
    for _ in range(400):
        rows, names, words = _random_table(rng)
        fast = _simple(rows, names, words)
        assert fast is not None
        assert fast == _tabulated(rows, names, words), (rows, names, words)


def test_cells_tabulate_measures_differently_go_to_tabulate():
    for cell in ["日本語のタイトル", "caf\u00e9", "\x1b[31mred\x1b[0m"]:
        rows = [("mem_1", cell), ("mem_2", "plain")]
        assert _simple(rows, ["id", "title"], [0, 1]) is None
        assert table(rows, ("id", "title")) == _tabulated(rows, ["id", "title"], [0, 1])
    assert _simple([(1, float("nan"))], ["a", "b"], []) is None


def test_a_table_of_no_rows_is_its_headers(tmp_path):
    # a store whose every memory was removed: `dmm status` printed "internal error: IndexError"
    assert table([], ("status", "memories")).split() == ["status", "memories", "--------",
                                                         "----------"]


def test_status_of_a_store_with_no_memory(tmp_path):
    import subprocess
    import sys

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    run = [sys.executable, "-m", "dmm"]
    subprocess.run(run + ["init"], cwd=tmp_path, check=True, capture_output=True)
    for f in (tmp_path / ".dmm" / "memory").rglob("*.md"):
        f.unlink()
    done = subprocess.run(run + ["status"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and "internal error" not in done.stderr, done.stderr
    assert "0 memories" in done.stdout
