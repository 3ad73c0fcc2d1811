"""The Memory Pack as a model reads it: compact markdown (templates/agent_pack.md.j2), the text
of MCP's memory_query result and of the agent hooks, and the one rendering whose cost the
budget counts. A pack asked for ``budget`` tokens costs the model at most that, counted by
dmm.memory.tokens over the whole text (headings, notes, conflicts and the excluded line
included), not only the memories' own text (which left a pack of 1,200 costing ~2,400).

build_pack is told what the text adds around the memories (ENTRY_OVERHEAD, ``reserve``), so
that it packs nearly the right number; ``text`` renders the pack and, where that estimate was
short, moves the last retrieved memories to the excluded ones until the whole text fits, or,
where it was generous, takes in the excluded memories that still fit.

Kinds: "query" (memory_query: baseline and retrieved memories), "baseline" (the SessionStart
hook: the baseline alone) and "prompt" (the UserPromptSubmit hook: the retrieved memories
alone; the session has the baseline).
"""

from __future__ import annotations

from dmm.memory.tokens import count_tokens

KINDS = ("query", "baseline", "prompt")
TASK_CHARS = 120  # the task, as the pack names it
# The line that names each memory in the text (`path` · id · confidence · created date) and its
# heading's extra '#': measured over the synthetic store of tests/benchmarks (18-30 tokens)
ENTRY_OVERHEAD = 26
# The first line and the excluded line, without the task (measured: 40-70 tokens)
FIXED = 70


# what the text says when the baseline alone is over the budget (build_pack's warning says it
# of the memories' own tokens; the text counts itself whole)
BASELINE_ALONE = "baseline memories alone"  # build_pack's warning starts so too
BASELINE_OVER = ("baseline memories alone, always given whole, are over the {budget:,}-token "
                 "budget")
NO_ROOM = ": no room is left for any other memory"  # in a pack that would hold others


def task_line(task: str) -> str:
    """The task in one short line: its first line, cut at a word."""
    first = " ".join(task.split("\n", 1)[0].split())
    if len(first) <= TASK_CHARS and "\n" not in task.strip():
        return first.replace('"', "'")
    cut = first[:TASK_CHARS].rsplit(" ", 1)[0] if len(first) > TASK_CHARS else first
    return cut.replace('"', "'") + " ..."


def reserve(task: str) -> int:
    """Tokens of the text around the memories, known before packing (the rest, notes and
    conflicts, is counted by build_pack and by ``text``)."""
    return FIXED + count_tokens(task_line(task))


def notes(pack, kind: str = "query") -> list[str]:
    """The pack's warnings and notes as the model reads them: facts, not advice for people
    (conflicts are stated from pack.conflicts; an empty pack says nothing)."""
    out = []
    for w in pack.warnings:
        if w.startswith("no memory matched") or " among these memories: " in w:
            continue
        if w.startswith(BASELINE_ALONE):  # its figure counts the memories, not the text
            w = BASELINE_OVER.format(budget=pack.budget) + (NO_ROOM if kind == "query" else "")
        if w.startswith("conflicts among these memories were not checked"):
            w = "conflicts among these memories were not checked (this cache was never scanned)"
        out.append(w)
    return out + list(pack.notes)


def text(pack, kind: str, task: str, conflicts_among=None) -> str:
    """The pack as the model reads it, within ``pack.budget`` tokens where the baseline
    allows: the last retrieved memories are moved to the excluded ones until it fits, and
    excluded ones that fit after all come in (``conflicts_among(ids)``: the known conflicts
    among packed memories, looked up again when one comes in). Sets ``pack.text_tokens``."""
    line = task_line(task)
    rendered = _render(pack, kind, line)
    while pack.text_tokens > pack.budget and pack.retrieved:
        _exclude_last(pack)
        rendered = _render(pack, kind, line)
    if pack.text_tokens > pack.budget and kind != "prompt" and pack.baseline and not any(
            w.startswith(BASELINE_ALONE) for w in pack.warnings):
        # over the budget with no retrieved memory left: the baseline (given whole) and the
        # text around it; the pack says so plainly, not only by its two figures
        pack.warnings.append(BASELINE_OVER.format(budget=pack.budget))
        rendered = _render(pack, kind, line)
    if kind == "baseline":
        return rendered
    for entry in list(pack.excluded):  # best first: those still fitting come in
        if entry.memory.tokens + ENTRY_OVERHEAD > pack.budget - pack.text_tokens:
            continue
        _include(pack, entry, conflicts_among)
        attempt = _render(pack, kind, line)
        if pack.text_tokens <= pack.budget:
            rendered = attempt
        else:
            _exclude(pack, entry)
            rendered = _render(pack, kind, line)
    return rendered


def _render(pack, kind: str, line: str) -> str:
    from dmm.render import render

    entries = (pack.baseline if kind != "prompt" else []) + \
        (pack.retrieved if kind != "baseline" else [])
    context = dict(kind=kind, task=line, pack=pack, notes=notes(pack, kind), entries=entries,
                   budget=f"{pack.budget:,}")
    # the text names its own cost: rendered with the budget's figure first (as many digits),
    # then with its own, which is then the cost of the text that names it
    cost = pack.budget
    for _ in range(3):
        out = render("agent_pack.md.j2", cost=f"{cost:,} tokens", **context)
        counted = count_tokens(out)
        if counted == cost:
            break
        cost = counted
    pack.text_tokens = counted  # of ``out``, the text last rendered (counting is O(text))
    return out


def _exclude_last(pack) -> None:
    """The last retrieved memory becomes the first excluded one, with the conflicts that
    named it."""
    _exclude(pack, pack.retrieved[-1])


def _include(pack, entry, conflicts_among) -> None:
    """An excluded memory that fits joins the retrieved ones, in the order of their scores,
    with the conflicts that name it."""
    pack.excluded.remove(entry)
    pack.excluded_total -= 1
    entry.reason = ""
    at = next((i for i, e in enumerate(pack.retrieved) if e.score < entry.score),
              len(pack.retrieved))
    pack.retrieved.insert(at, entry)
    if conflicts_among is not None:
        _conflicts(pack, conflicts_among([e.memory.id for e in pack.baseline + pack.retrieved]))


def _exclude(pack, entry) -> None:
    pack.retrieved.remove(entry)
    entry.reason = f"needs {entry.memory.tokens} tokens; not enough budget left"
    at = next((i for i, e in enumerate(pack.excluded) if e.score < entry.score),
              len(pack.excluded))
    pack.excluded.insert(at, entry)
    pack.excluded_total += 1
    kept = {e.memory.id for e in pack.baseline + pack.retrieved}
    _conflicts(pack, [c for c in pack.conflicts if all(m.memory_id in kept for m in c.memories)])


def _conflicts(pack, found: list) -> None:
    """``found`` are now the conflicts among the packed memories, and the warning says so."""
    if [c.conflict_id for c in found] == [c.conflict_id for c in pack.conflicts]:
        return
    from dmm.query.pack import conflicts_warning

    pack.conflicts = found
    pack.warnings = [w for w in pack.warnings if " among these memories: " not in w] + (
        [conflicts_warning(found)] if found else [])


def prepare() -> None:
    """Render an empty pack once, both ways (the text a model reads and `dmm query`'s
    markdown): a long-lived process compiles the templates as it starts (jinja2: 100-300 ms
    of a loaded machine) rather than in its first request, a hook with a deadline."""
    from dmm.query.pack import Pack
    from dmm.render import render

    pack = Pack(task="", budget=100, baseline=[], retrieved=[], excluded=[], excluded_total=0,
                candidates=0, warnings=[])
    text(pack, "prompt", "warm-up")
    render("pack.md.j2", pack=pack, stats=pack.stats())
