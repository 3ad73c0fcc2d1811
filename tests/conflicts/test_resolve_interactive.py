"""`dmm conflicts resolve --interactive` in a real terminal (a pseudo-terminal driven by
pexpect): keys, prompts, the editor for merges, and quitting half-way."""

from __future__ import annotations

import os
import sys
import textwrap

import pexpect
import pytest

from tests.conflicts.test_resolution import (BEANSTALK, NEW_LIMIT, NODE18, NODE22, OLD_LIMIT,
                                             SQS, conflicts, store)  # noqa: F401
from tests.conftest import git

MENU = r"\[q\] quit: "


def spawn(repo, **env) -> pexpect.spawn:
    child = pexpect.spawn(sys.executable, ["-m", "dmm", "conflicts", "resolve", "--interactive"],
                          cwd=str(repo.root), env={**os.environ, **env}, encoding="utf-8",
                          timeout=60, dimensions=(50, 140))
    return child


def current(child: pexpect.spawn) -> set[str]:
    """The two memory ids of the conflict on screen."""
    child.expect(MENU)
    screen = child.before
    return {i for i in (OLD_LIMIT, NEW_LIMIT, BEANSTALK, SQS, NODE18, NODE22) if i in screen}


def test_keep_dismiss_then_quit_leaves_everything_consistent(store):
    head = git(store.root, "rev-parse", "HEAD")
    child = spawn(store)
    decided = []
    first = current(child)
    assert "recommended:" in child.before and "evidence:" in child.before
    assert " | " in child.before  # both memories side by side
    child.sendline("a")
    child.expect("Reason")
    child.sendline("")  # the default reason
    child.expect("committed")
    decided.append(first)
    second = current(child)
    child.sendline("x")  # not a choice: asked again
    child.expect(MENU)
    child.sendline("d")
    child.expect("Reason")
    child.sendline("different things, same words")
    child.expect("committed")
    decided.append(second)
    third = current(child)
    child.sendline("q")
    child.expect("stopped: 2 resolved")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert git(store.root, "rev-list", "--count", f"{head.strip()}..HEAD").strip() == "2"
    assert git(store.root, "status", "--porcelain") == ""
    statuses = {pair: c["status"] for pair, c in conflicts(store, "--status", "all").items()}
    assert statuses[frozenset(decided[0])] == "resolved"
    assert statuses[frozenset(decided[1])] == "dismissed"
    assert statuses[frozenset(third)] == "unresolved"


def test_merge_opens_the_editor_and_eof_quits(store, tmp_path):
    editor = tmp_path / "editor.py"
    editor.write_text(textwrap.dedent("""\
        import sys
        with open(sys.argv[1], encoding="utf-8") as f:
            draft = f.read()
        assert draft.startswith("# "), draft
        with open(sys.argv[1], "w", encoding="utf-8") as f:
            f.write("# One merged rule\\n\\nWritten in the editor, from both memories.\\n")
        """))
    child = spawn(store, EDITOR=f"{sys.executable} {editor}", VISUAL="")
    pair = current(child)
    child.sendline("m")
    child.expect("Reason")
    child.sendline("one rule is enough")
    child.expect("committed")
    current(child)
    child.sendeof()  # Ctrl-D at the menu: quit, as with q
    child.expect("stopped: 1 resolved")
    child.expect(pexpect.EOF)
    child.close()
    merged = [p for p in store.memory.rglob("merged_rule.md")]
    assert len(merged) == 1 and "Written in the editor" in merged[0].read_text()
    resolved = conflicts(store, "--status", "resolved")[frozenset(pair)]
    assert resolved["decision"]["action"] == "merge"


def test_interactive_needs_a_terminal(store):
    proc = store.dmm("conflicts", "resolve", "--interactive")
    assert proc.returncode != 0 and "terminal" in proc.stderr and "Traceback" not in proc.stderr
