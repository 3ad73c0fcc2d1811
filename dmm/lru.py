"""What a long-lived process keeps per work tree, bounded: the background process serves every
work tree of its clone (dmm/background/daemon.py) and keeps, for each one it answered, its
semantic index (the memories' vectors) and its postings (dmm/query/resident.py). Without a
bound, a clone with many work trees would hold them all for as long as it lives; with one,
the least recently asked of is dropped (it is read again from the cache and the vector cache
on disk when next asked of: nothing is lost, only that one request pays for it)."""

from __future__ import annotations

from typing import Callable, TypeVar

V = TypeVar("V")


def recent(table: dict, key, make: Callable[[], V], limit: int,
           in_use: Callable[[object], bool] = lambda key: False) -> V:
    """``table[key]`` (made by ``make`` when absent), now the most recently used; the least
    recently used entries past ``limit`` are dropped, but never ``key`` nor one ``in_use``
    (being built: dropping it would waste the work). The caller holds the table's lock."""
    value = table.pop(key) if key in table else make()
    table[key] = value  # a dict keeps insertion order: the last is the most recent
    dropped = False
    for old in list(table):
        if len(table) <= max(1, limit):
            break
        if old != key and not in_use(old):
            del table[old]
            dropped = True
    if dropped:
        give_back()
    return value


def give_back() -> None:
    """Return freed memory to the system: glibc keeps a freed heap for reuse, so without this
    a dropped work tree's postings would leave the process as large as before (its RSS)."""
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)  # the symbols the process has loaded: its libc's
    except (OSError, AttributeError, TypeError):
        pass  # not glibc (macOS, musl): the memory is reused by the process instead
