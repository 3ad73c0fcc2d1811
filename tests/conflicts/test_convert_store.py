"""tools/convert_store.py: a folder of documents in a git repository becomes a store that dmm
reads without a problem and the eval tool scores."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dmm.store import read, scan

ROOT = Path(__file__).resolve().parents[2]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={"GIT_AUTHOR_DATE": "2024-05-06T10:00:00", "GIT_COMMITTER_DATE":
                        "2024-05-06T10:00:00", "HOME": str(cwd), "PATH": "/usr/bin:/bin"})


def test_documents_become_memories_with_titles_tags_and_dates(tmp_path):
    src = tmp_path / "src"
    (src / "rules" / "vue").mkdir(parents=True)
    (src / "rules" / "react-hooks.mdc").write_text(
        "---\ndescription: Cursor rules for React hooks\nglobs: **/*.tsx\n---\n"
        "- Call hooks at the top level.\n")
    (src / "rules" / "vue" / "README.md").write_text(
        "# Vue 3 Guidelines\n\nUse the Composition API.\n")
    (src / "rules" / "notes.txt").write_text("not a document\n")
    git(src, "init", "-q")
    git(src, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(src, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "rules")

    out = tmp_path / "eval" / "real" / "rules"
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "convert_store.py"), str(src),
                           "rules", str(out), "--tag", "cursorrules"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    memory_dir = out / "memory"
    memories = {}
    for rel in scan(memory_dir):
        memory, problems = read(memory_dir, rel, 1_000_000)
        assert memory is not None and not problems, (rel, problems)
        memories[memory.title] = memory
    # the frontmatter's globs are not YAML (a cursor rule's "**/*.tsx"): the file name titles it
    assert set(memories) == {"react hooks", "Vue 3 Guidelines"}
    vue = memories["Vue 3 Guidelines"]
    assert "cursorrules" in vue.tags and "vue" in vue.tags  # the folder names the document
    assert str(vue.created) == "2024-05-06" and "Composition API" in vue.body
    assert json.loads((out / "truth.json").read_text())["memories"] == 2

    # a second run into the same folder refuses instead of mixing two conversions
    again = subprocess.run([sys.executable, str(ROOT / "tools" / "convert_store.py"), str(src),
                            "rules", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert again.returncode == 1 and "exists" in again.stderr
