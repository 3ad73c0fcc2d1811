"""Requests first (dmm/priority.py): background work pauses while a request is answered,
never a request itself, and never for ever."""

from __future__ import annotations

import threading
import types

import pytest

from dmm import priority


@pytest.fixture
def no_sleep(monkeypatch):
    """step_aside may not pause at all."""
    def sleep(seconds: float) -> None:
        raise AssertionError("paused")

    monkeypatch.setattr(priority, "time", types.SimpleNamespace(
        sleep=sleep, monotonic=priority.time.monotonic))


def _request(started: threading.Event, done: threading.Event) -> threading.Thread:
    def answer() -> None:
        with priority.answering():
            started.set()
            done.wait(10)

    thread = threading.Thread(target=answer)
    thread.start()
    assert started.wait(10)
    return thread


def test_background_work_waits_until_the_request_is_answered():
    started, done = threading.Event(), threading.Event()
    request = _request(started, done)
    returned: list[bool] = []  # whether the request had been answered when it returned
    work = threading.Thread(target=lambda: (priority.step_aside(),
                                            returned.append(done.is_set())))
    work.start()
    work.join(0.3)
    assert work.is_alive()  # waiting
    done.set()
    request.join(10)
    work.join(10)
    assert returned == [True]


def test_a_request_never_waits_for_itself_or_another(no_sleep):
    started, done = threading.Event(), threading.Event()
    other = _request(started, done)
    try:
        with priority.answering():
            priority.step_aside()  # as the walk of a request's own refresh calls it
    finally:
        done.set()
        other.join(10)


def test_nothing_being_answered_nothing_is_waited_for(no_sleep):
    priority.step_aside()


def test_background_work_is_not_starved_by_requests_back_to_back(monkeypatch):
    monkeypatch.setattr(priority, "MAX_PAUSE_S", 0.1)
    started, done = threading.Event(), threading.Event()
    request = _request(started, done)
    try:
        priority.step_aside()  # returns, the request still being answered
        assert not done.is_set() and priority._answering[0] == 1
    finally:
        done.set()
        request.join(10)


def test_a_request_waiting_for_background_work_lets_it_go_on(no_sleep):
    """A request that waits for what a background thread does (a lock it holds, an index it
    builds) does not hold that thread back meanwhile: it would wait for the request, which
    waits for it."""
    with priority.answering():
        with priority.waiting():
            priority._here.request = False  # as the background thread sees it
            try:
                priority.step_aside()
            finally:
                priority._here.request = True
        assert priority._answering[0] == 1
    assert priority._answering[0] == 0


def test_a_query_waits_for_the_lock_of_a_walk_that_steps_aside(monkeypatch):
    """The warm-up walks the store holding the watch's lock and steps aside for requests; a
    request that needs that lock is answered once the walk is done, not after the longest
    pause (the two waited for each other)."""
    from dmm.index.refresh import _held

    monkeypatch.setattr(priority, "MAX_PAUSE_S", 600.0)  # waiting for each other: 10 minutes
    lock = threading.Lock()
    walking, done = threading.Event(), threading.Event()
    steps: list[bool] = []

    def walk() -> None:
        with lock:
            walking.set()
            for _ in range(5):
                priority.step_aside()
                steps.append(True)
        done.set()

    started, answered = threading.Event(), threading.Event()

    def request() -> None:
        with priority.answering():
            started.set()
            walking.wait(10)
            with _held(lock):
                answered.set()

    asker = threading.Thread(target=request)
    asker.start()
    assert started.wait(10)
    walker = threading.Thread(target=walk)
    walker.start()
    assert done.wait(60)
    asker.join(10)
    walker.join(10)
    assert answered.is_set() and len(steps) == 5
