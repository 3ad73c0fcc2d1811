"""Requests first: in a long-lived process (the repository's background process), the work it
does for later requests (checking the files, reading every term's postings, loading the
semantic index: seconds of one core at 50,000 memories, holding the interpreter) pauses
between its steps while a request is being answered, so that a hook of a process that is
still warming answers within its deadline.

Pure bookkeeping: a counter, a mark on the threads answering, and a pause; no IO. In a
short-lived command nothing is ever being answered, and ``step_aside`` returns at once.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Iterator

YIELD_S = 0.01  # how long background work pauses, at a time, while a request is answered
MAX_PAUSE_S = 5.0  # a step never waits longer than this (requests back to back all day)

_lock = threading.Lock()
_answering = [0]  # requests being answered now
_here = threading.local()  # .request: this thread is answering one


@contextlib.contextmanager
def answering() -> Iterator[None]:
    """The calling thread answers a request meanwhile."""
    with _lock:
        _answering[0] += 1
    _here.request = True
    try:
        yield
    finally:
        _here.request = False
        with _lock:
            _answering[0] -= 1


@contextlib.contextmanager
def waiting() -> Iterator[None]:
    """The calling thread, answering a request, waits for background work (a lock it holds,
    the semantic index it builds): not counted meanwhile, so that work goes on rather than
    step aside for the request that waits for it."""
    if not getattr(_here, "request", False):
        yield
        return
    with _lock:
        _answering[0] -= 1
    try:
        yield
    finally:
        with _lock:
            _answering[0] += 1


def step_aside() -> None:
    """Called by work between its steps (never inside a transaction another process's writer
    would wait for): in a thread that is not answering a request, returns once no request is
    being answered, or after MAX_PAUSE_S; in one that is, at once (a request never waits for
    itself or another)."""
    if not _answering[0] or getattr(_here, "request", False):
        return
    deadline = time.monotonic() + MAX_PAUSE_S
    while _answering[0] and time.monotonic() < deadline:
        time.sleep(YIELD_S)
