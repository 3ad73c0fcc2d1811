"""The cache's copy of each memory's text features (features.text_features), so that a scan
reads them instead of computing them again.

Computing them is most of a scan's time: an incremental scan of one changed memory in a store
of 50,000 compares it with a few hundred others, and built their features anew every time
(1.7 s of 3 s). The first scan that reads a memory (a full scan reads them all) keeps its
features in the cache's table ``features``, by path, as marshal (never pickle: the cache is a
file any process of the user can write, and loading it must not run code).

Each row carries a key: a fingerprint of what decides the features, the memory's title,
body, tags and path, and the code that computes them (the source of the modules
text_features reads with, and this module's FORMAT). A row whose key is not the memory's as
read now is stale (the memory changed, or dmm did) and is computed and kept again; no setting
of config.toml enters the features (text_features takes none). What depends on the whole
store (document frequencies, the vectors' weights) is never kept here: the scan computes it
from the statistics the cache keeps (tables ``terms``, ``postings``). A rebuilt cache starts
empty.

Beside the blob, a row says in columns what SQL needs to know without reading it: the code
and the memory's digest and title it was computed from (so that a query tells a row of the
memory as it is now from a stale one) and the X of the move "from X to Y" the memory records
(``moved_from``): an incremental scan loads only the moves that name what its changed
memories name (analyzers/temporal.py's reversals), not every memory recording a move.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import marshal
import sqlite3
import sys
from functools import lru_cache
from typing import Callable

from dmm.conflicts.cues import first_move
from dmm.conflicts.features import text_features
from dmm.conflicts.quantities import Quantity, Version
from dmm.index.db import in_chunks
from dmm.index.refresh import digest
from dmm.memory import Memory

# the modules whose code decides text_features' answer (features.py's imports that read text)
MODULES = ("dmm.conflicts.features", "dmm.conflicts.alternatives", "dmm.conflicts.anchors",
           "dmm.conflicts.contexts", "dmm.conflicts.cues", "dmm.conflicts.headings",
           "dmm.conflicts.names", "dmm.conflicts.prose", "dmm.conflicts.quantities",
           "dmm.text.analyze")
# what a row holds, and marshal's format (a newer Python may write another): a change of
# either makes every kept row stale
FORMAT = f"features 1, marshal {marshal.version}"
FLUSH = 2000  # memories' features computed before they are written (a first full scan's)
# the fields holding named tuples, which marshal keeps as plain tuples
_NAMED = {"quantities": Quantity, "versions": Version, "point_versions": Version}


@lru_cache(maxsize=1)
def code_version() -> bytes:
    """A fingerprint of the source of MODULES (read once per process): features kept by
    another version of dmm are computed again."""
    fingerprint = hashlib.sha1(FORMAT.encode())
    for name in MODULES:
        spec = importlib.util.find_spec(name)
        with open(spec.origin, "rb") as f:
            fingerprint.update(f.read())
    return fingerprint.digest()


def key(m: Memory) -> bytes:
    """What a memory's kept features must have been computed from."""
    fingerprint = hashlib.sha1(code_version())
    fingerprint.update("\x1f".join((m.path, m.title, json.dumps(m.tags), m.body)).encode())
    return fingerprint.digest()


INTERNED = "_interned"  # a row written with its strings interned (``pack``)


def pack(fields: dict) -> bytes:
    """``fields`` (their strings interned: ``_interned``) as a row's blob: marshal keeps the
    mark, and the strings a row loads are then shared with every other row's (a memory's
    words, names and anchors are mostly other memories' too: 86 MB of strings, 11 MB
    distinct, in a full scan of 50,000 memories)."""
    return marshal.dumps({INTERNED: True} | {
        name: [tuple(v) for v in value] if name in _NAMED else value
        for name, value in fields.items()})


def unpack(data: bytes) -> dict:
    fields = marshal.loads(data)
    if not isinstance(fields, dict):
        raise ValueError("not a row of features")
    if not fields.pop(INTERNED, False):  # a row kept before rows were: interned on reading
        fields = {name: _interned(value) for name, value in fields.items()}
    for name, kind in _NAMED.items():
        fields[name] = [kind(*v) for v in fields[name]]
    return fields


MAX_DEPTH = 8  # a row's fields nest a few levels (a list of tuples of sets): more is damage


def _interned(value, depth: int = 0):
    """``value`` with every string in it interned (sys.intern); ValueError for a value
    nested deeper than any row's (a damaged or planted row: the cache is a file any process
    of the user can write, and deep nesting would exhaust Python's recursion)."""
    kind = type(value)
    if kind is str:
        return sys.intern(value)
    if depth > MAX_DEPTH:
        raise ValueError("a row of features nested too deep")
    depth += 1
    if kind is set:
        return {_interned(v, depth) for v in value}
    if kind is list:
        return [_interned(v, depth) for v in value]
    if kind is tuple:
        return tuple(_interned(v, depth) for v in value)
    if kind is dict:
        return {_interned(k, depth): _interned(v, depth) for k, v in value.items()}
    return value


class Kept:
    """The text features of a scan's memories: read from the cache, computed for those it
    lacks (or holds stale), which save() then writes."""

    def __init__(self, conn: sqlite3.Connection, memories: list[Memory] = ()):
        self.conn = conn
        self.keys: dict[str, bytes] = {}
        self.rows: dict[str, bytes] = {}
        self.known: dict[str, dict] = {}  # asked for by fields() before build() takes them
        self.computed: dict[str, tuple] = {}  # path: the row's other columns
        self.read(memories)

    def read(self, memories: list[Memory]) -> None:
        """Read the kept rows of ``memories`` (those not read yet) that are still theirs."""
        new = {m.path: key(m) for m in memories if m.path not in self.keys}
        self.keys.update(new)
        for chunk, marks in in_chunks(sorted(new)):
            for path, k, data in self.conn.execute(
                    f"SELECT path, key, data FROM features WHERE path IN ({marks})", chunk):
                if k == new[path]:
                    self.rows[path] = data

    def fields(self, m: Memory) -> dict:
        """``m``'s text features, kept for texts() to hand to build()."""
        if m.path not in self.known:
            self.known[m.path] = self.texts(m)
        return self.known[m.path]

    def texts(self, m: Memory) -> dict:
        """``m`` (one of the memories read)'s text features, for build(): kept, else
        computed and remembered for save()."""
        if m.path in self.known:
            return self.known.pop(m.path)
        data = self.rows.pop(m.path, None)  # read once: the blob is not held meanwhile
        if data is not None:
            try:
                return unpack(data)
            except (ValueError, EOFError, TypeError, KeyError):
                pass  # a damaged row: computed again, and replaced
        fields = _interned(text_features(m))  # shared with the other memories' (pack)
        if m.path not in self.keys:
            self.keys[m.path] = key(m)
        move = first_move(fields["changes"])
        self.computed[m.path] = (pack(fields), code_version(), digest(m), m.title,
                                 move[1].group(1).lower() if move else None)
        if len(self.computed) >= FLUSH and not self.conn.in_transaction:
            self.save()
        return fields

    def save(self, tidy: bool = False) -> None:
        """Write the features computed meanwhile; ``tidy`` (a full scan read every memory):
        drop the rows of files the store no longer holds."""
        if not self.computed and not tidy:
            return
        conn = self.conn
        own = not conn.in_transaction  # else part of the caller's
        if own:
            conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR REPLACE INTO features(path, key, data, code, digest, "
                             "title, moved_from) VALUES (?, ?, ?, ?, ?, ?, ?)",
                             [(p, self.keys[p], *row) for p, row in self.computed.items()])
            if tidy:
                conn.execute("DELETE FROM features WHERE path NOT IN (SELECT path FROM memories)")
            if own:
                conn.execute("COMMIT")
        except BaseException:
            if own:
                conn.execute("ROLLBACK")
            raise
        self.computed.clear()

