"""memory_list and memory_show answered from the memory files themselves while another dmm
builds the memory index for the first time (a new clone, the first minute of an agent's
session: seconds for thousands of memories), rather than waiting for every file to be read
(issue 36: memory_list took 2 s on an idle machine, 7 s at load 8).

The files say what the index would: a memory is its file. What takes the build seconds is
reading them all, so a list reads them in path order for at most READ_S and, when it could
not read them all, says the list is partial and how far it got (a list in path order is then
still the first page of the whole list; another order is of what was read). A memory named by
its path is one file; one named by its id is looked for in the files, for at most READ_S (the
first file that has it: the index, once built, also says when two files share an id).

Pure plumbing for dmm.agents.calls; no printing.
"""

from __future__ import annotations

import time

from dmm.errors import InvalidInputError, NotFoundError
from dmm.workspace import Workspace

# how long a list or a show reads memory files past its wait for the build (the wait and this
# together stay well inside the second an agent's call has)
READ_S = 0.3
# what a list or a show waits for another dmm's first build before reading the files (a small
# store's build may end by then; a brief lock of the cache always does)
WAIT_S = 0.1
_clock = time.monotonic  # (a test's clock instead)
BUILDING = ("the memory index is being built for the first time (another dmm is reading every "
            "memory file)")
HELD = "another dmm holds the memory index (a first build or a reindex writing it)"


def _memory_paths(ws: Workspace, under: str = "") -> list[str]:
    """The memory files below ``under`` (a folder of .dmm/memory/), in path order."""
    from dmm import store

    prefix = under.strip("/")
    return sorted(p for p in store.scan(ws.memory_dir) if p.endswith(".md") and (
        not prefix or p == prefix or p.startswith(prefix + "/")))


def listing(ws: Workspace, chosen, limit: int, held: bool = False) -> dict:
    """The memories ``chosen`` (a memory.select.Selection) chooses, read from their files:
    at most ``limit``, with ``total`` and a ``note`` saying why (``held``: the cache is
    locked, by a first build or a reindex, rather than known to be built first), and
    ``partial`` when not every file could be read within READ_S."""
    from dmm import store
    from dmm.lookup import memory_record
    from dmm.memory.select import select

    max_bytes = int(ws.config["store"]["max_file_bytes"])
    paths = _memory_paths(ws, chosen.under)
    # in path order, the first ``limit`` found are the first page of the whole list
    in_order = chosen.sort == "path" and not chosen.reverse
    deadline = _clock() + READ_S
    found, read = [], 0
    for rel in paths:  # all of a small store (its total too); a large one's first READ_S
        if _clock() >= deadline:
            break
        memory, _ = store.read(ws.memory_dir, rel, max_bytes)
        read += 1
        if memory is not None and select([memory], chosen):
            found.append(memory)
    found = select(found, chosen)  # in the order asked
    out = {"memories": [memory_record(m, content=False) for m in found[:limit]],
           "total": len(found)}
    why = HELD if held else BUILDING
    if read < len(paths):
        out.update(partial=True, note=(
            f"{why}: this list is read from the memory files, {read:,} of {len(paths):,} "
            "read so far in path order, and total counts the memories among those; "
            + ("the next_cursor continues it" if in_order else
               "this order is of those read (sorted by path, a page is the true first page)")
            + "; ask again in a moment for the whole list"))
    else:
        out["note"] = f"{why}: this list is read from the memory files"
    return out


def show(ws: Workspace, key: str) -> dict | None:
    """The memory named ``key`` (an id or a path) read from its file, or None when it was not
    found within READ_S (the caller asks the index, once built)."""
    from dmm import store
    from dmm.fsutil import UnreadableFile, read_regular
    from dmm.lookup import memory_record

    max_bytes = int(ws.config["store"]["max_file_bytes"])
    if "/" in key or key.endswith(".md"):
        rel = ws.memory_relpath(key)
        memory, problems = store.read(ws.memory_dir, rel, max_bytes)
        if memory is None:
            errors = [p.message for p in problems if p.severity == "error"]
            if not errors or not (ws.memory_dir / rel).exists():
                raise NotFoundError(f"no memory with id or path {key!r}",
                                    hint="memory_list names the memories")
            raise InvalidInputError(f"{rel} cannot be read: {'; '.join(errors)}",
                                    hint="run `dmm validate` for every problem")
        return memory_record(memory, problems)
    needle = key.encode()
    deadline = _clock() + READ_S
    paths = _memory_paths(ws)
    for rel in paths:
        if _clock() >= deadline:
            return None
        try:  # never through a link, never a FIFO (as store.read)
            raw = read_regular(ws.memory_dir / rel, max_bytes)
        except (OSError, UnreadableFile):
            continue
        if needle not in raw:  # most files: no parse
            continue
        memory, problems = store.read(ws.memory_dir, rel, max_bytes)
        if memory is not None and memory.id == key:
            return memory_record(memory, problems)
    raise NotFoundError(f"no memory with id or path {key!r}",
                        hint="memory_list names the memories")
