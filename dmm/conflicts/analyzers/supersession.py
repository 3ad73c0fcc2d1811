"""Supersession chains: orphaned, circular, contested and incomplete `supersedes` links.

Structural, so nearly certain: a proper chain (the superseded memory is deprecated) is fine.
A circle of any length (A supersedes B supersedes C supersedes A) is one finding, the whole
chain: its links are not orphaned one by one, since no memory of a circle can be the current
one by its links alone (seeds/000 5.4).
"""

from __future__ import annotations

from dmm.conflicts.analyzers.base import ScanContext
from dmm.conflicts.model import Candidate

NAME = "supersession_chain"


def circles(links: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected groups (two memories or more) of the graph ``links`` (memory ->
    the memories it supersedes), each in the order its links run, from its smallest id.
    Iterative Tarjan: a chain in a store may be long, and recursion has a limit."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []
    for root in sorted(links):
        if root in index:
            continue
        work = [(root, iter(links.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, succ = work[-1]
            nxt = next((s for s in succ if s in links), None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(links.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(_walk(set(group), links))
    return groups


def _walk(group: set[str], links: dict[str, list[str]]) -> list[str]:
    """The members of ``group`` along their links from the smallest id (a simple circle reads
    in order; members a more tangled group's walk does not reach follow, sorted)."""
    path, node = [], min(group)
    while node is not None and node not in path:
        path.append(node)
        node = next((s for s in sorted(links.get(node, ())) if s in group and s not in path),
                    None)
    return path + sorted(group - set(path))


def analyze(ctx: ScanContext) -> list[Candidate]:
    feats = ctx.features
    active = {i for i, f in feats.items() if f.memory.is_active}
    links = {mid: [old for old in f.memory.supersedes if old != mid and old in feats]
             for mid, f in feats.items()}
    out, in_circle = _circular(links, active)
    superseders: dict[str, list[str]] = {}
    for mid, olds in links.items():
        for old in olds:
            superseders.setdefault(old, []).append(mid)
            if in_circle.get(mid) is not None and in_circle.get(mid) == in_circle.get(old):
                continue  # a link of a circle: the circle is the finding
            if mid in active and old in active:
                out.append(Candidate(mid, old, NAME, "supersession", 0.95,
                                     f"orphaned: {mid} supersedes {old}, which is still "
                                     "active"))
            elif mid not in active and old in active:
                out.append(Candidate(mid, old, NAME, "supersession", 0.9,
                                     f"incomplete: deprecated {mid} supersedes {old}, which is "
                                     "still active"))
    for old, news in superseders.items():
        contenders = sorted(n for n in news if n in active)
        for i, a in enumerate(contenders):
            for b in contenders[i + 1:]:
                if in_circle.get(a) is not None and in_circle.get(a) == in_circle.get(b):
                    continue
                out.append(Candidate(a, b, NAME, "supersession", 0.93,
                                     f"contested: both {a} and {b} supersede {old}"))
    for c in out:
        c.on_point = 1.0  # the links are the memories' own frontmatter
    return [c for c in out if c.a in ctx.focus or c.b in ctx.focus
            or (c.a in in_circle and ctx.focus & circle_members(in_circle, c.a))]


def _circular(links: dict[str, list[str]], active: set[str],
              ) -> tuple[list[Candidate], dict[str, int]]:
    """One candidate per circle with two active memories or more, under its first two active
    members; and {memory: its circle's number} for the members of those circles."""
    out, member_of = [], {}
    for n, circle in enumerate(circles(links)):
        current = [m for m in circle if m in active]
        if len(current) < 2:  # one active memory left: the others are retired, it is current
            continue
        member_of.update(dict.fromkeys(circle, n))
        closed = circle[0] in links.get(circle[-1], ())
        chain = (" -> ".join(circle + circle[:1]) if closed
                 else f"{', '.join(circle)} supersede one another in a circle")
        out.append(Candidate(current[0], current[1], NAME, "supersession", 0.97,
                             f"circular: {chain}"))
    return out, member_of


def circle_members(member_of: dict[str, int], mid: str) -> set[str]:
    """The memories of ``mid``'s circle."""
    return {m for m, n in member_of.items() if n == member_of[mid]}
