"""Count the memories the reviewer's wording rules (dmm/proposals/wording.py) flag in stores
written by people: a rule that flags good memories is wrong, whatever it catches.

    python tools/wording_on_stores.py ../shared/eval/real/*/ ../shared/eval/dev ../shared/eval/dev2
    python tools/wording_on_stores.py STORE... --show     # every flagged memory, with why

A store is any folder: every `.md` file under a `memory/` folder in it is read as a memory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dmm.memory.parse import parse_memory  # noqa: E402
from dmm.proposals.wording import added_topics, undefined_references  # noqa: E402


def memories(store: Path) -> list:
    out = []
    for path in sorted(store.rglob("*.md")):
        rel = str(path.relative_to(store))
        if "memory/" not in rel:
            continue
        memory, _ = parse_memory(path.read_text(encoding="utf-8"), rel.split("memory/", 1)[1])
        if memory is not None:
            out.append((rel, memory))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", nargs="+", type=Path)
    ap.add_argument("--show", action="store_true", help="print every flagged memory")
    args = ap.parse_args()
    print("| store | memories | second topic | undefined reference |")
    print("| --- | --- | --- | --- |")
    shown = []
    for store in args.stores:
        read = memories(store)
        topics = [(rel, added_topics(m.title, m.body)) for rel, m in read]
        loose = [(rel, undefined_references(m.title, m.body)) for rel, m in read]
        topics, loose = [t for t in topics if t[1]], [x for x in loose if x[1]]
        print(f"| {store.name or store} | {len(read)} | {len(topics)} | {len(loose)} |")
        shown += [(store.name, rel, why) for rel, why in topics + loose]
    if args.show:
        for name, rel, why in shown:
            print(f"{name}/{rel}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
