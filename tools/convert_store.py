"""Turn a folder of markdown documents in a git repository into a store the eval tool reads.

    python tools/convert_store.py REPO FOLDER OUT [--tag T] [--scope S] [--match REGEX]
                                  [--title heading|title|name|description]

Rule collections, agent definitions and decision records written by other people are the test a
conflict detector must pass: nothing in them is a conflict unless their authors say so (a
superseded decision), so every flag is a false alarm to read. This writes OUT/memory/ (one memory
per document: the document's own frontmatter dropped, its first heading or the chosen field as the
title, tags from the collection, the folder and the file name, `created` from the commit that
added the file) and an empty OUT/truth.json. Score it with

    python tools/eval_conflicts.py DIR --details    # DIR holds real/OUT

No network: REPO is a local clone. The documents' licences stay theirs; keep converted stores out
of this repository.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

GENERIC = {"md", "mdc", "cursorrules", "prompt", "file", "readme", "index"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          errors="replace", check=True).stdout


def added_dates(repo: Path, folder: str) -> dict[str, str]:
    """The date each file was first added (one `git log`, newest first, so the oldest wins)."""
    dates, day = {}, None
    for line in git(repo, "log", "--format=@%as", "--name-only", "--diff-filter=A", "HEAD",
                    "--", folder).splitlines():
        if line.startswith("@"):
            day = line[1:]
        elif line.strip():
            dates[line.strip()] = day
    return dates


def title_and_body(text: str, fallback: str, field: str) -> tuple[str, str]:
    meta, body = {}, text.strip()
    found = re.match(r"---\s*\n(.*?)\n---\s*\n", text, re.S)
    if found:
        try:
            meta = yaml.safe_load(found.group(1)) or {}
        except yaml.YAMLError:  # not YAML (a cursor rule's globs, say): drop it all the same
            meta = {}
        meta = meta if isinstance(meta, dict) else {}
        body = text[found.end():].strip()
    heading = re.search(r"^#\s+(.+)$", body, re.M)
    if field == "heading" and heading and heading.start() < 400:
        return heading.group(1).strip(), (body[:heading.start()] + body[heading.end():]).strip()
    title = str(meta.get(field) or meta.get("title") or meta.get("name")
                or meta.get("description") or fallback)
    return title.strip()[:120], body


def convert(repo: Path, folder: str, out: Path, tag: str, scope: str, match: str,
            field: str) -> int:
    names = [n for n in git(repo, "ls-tree", "-r", "--name-only", "HEAD", folder).splitlines()
             if re.search(match, n)]
    dates = added_dates(repo, folder)
    serial: dict[str, int] = {}
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        stem = Path(name).stem
        if stem.lower() in ("readme", "index"):  # one folder per document: the folder names it
            stem = Path(name).parent.name
        title, body = title_and_body(git(repo, "show", f"HEAD:{name}"),
                                     stem.replace("-", " ").replace("_", " "), field)
        day = dates.get(name) or "2025-01-01"
        serial[day] = serial.get(day, 0) + 1
        folder_tag = re.sub(r"[^a-z0-9-]", "", Path(name).parent.name.lower()) or "misc"
        words = [w for w in re.split(r"[-_. ]+", stem.lower()) if w and w not in GENERIC][:4]
        tags = list(dict.fromkeys([tag, folder_tag, *words]))[:6]
        path = out / "memory" / scope / folder_tag / (re.sub(r"[^a-z0-9_]", "_",
                                                               stem.lower())[:60] + ".md")
        while path.exists():
            path = path.with_name(path.stem + "_.md")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"---\nid: mem_{day.replace('-', '_')}_{serial[day]:03d}\n"
            f"tags: [{', '.join(tags)}]\nscope: {scope}\npriority: 0.5\nconfidence: active\n"
            f"status: active\ncreated: {day}\n---\n\n# {title}\n\n{body}\n", encoding="utf-8")
    (out / "truth.json").write_text(json.dumps({"source": str(repo), "memories": len(names),
                                                "supersession_pairs": []}, indent=1))
    return len(names)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", type=Path, help="a local git repository (a clone, or a bare one)")
    ap.add_argument("folder", help="the folder of documents inside it ('.' for all)")
    ap.add_argument("out", type=Path, help="the store to write (OUT/memory, OUT/truth.json)")
    ap.add_argument("--tag", default="collection", help="a tag every memory gets")
    ap.add_argument("--scope", default="project", choices=["baseline", "global", "agent",
                                                           "project", "ephemeral"])
    ap.add_argument("--match", default=r"\.(md|mdc)$", help="regex the file paths must match")
    ap.add_argument("--title", default="heading",
                    choices=["heading", "title", "name", "description"],
                    help="the document's first heading, or a field of its frontmatter")
    args = ap.parse_args()
    if (args.out / "memory").exists():
        print(f"error: {args.out / 'memory'} exists; choose a new folder", file=sys.stderr)
        return 1
    n = convert(args.repo, args.folder, args.out, args.tag, args.scope, args.match, args.title)
    print(f"{n} memories in {args.out / 'memory'}", file=sys.stderr)
    return 0 if n else 1


if __name__ == "__main__":
    sys.exit(main())
