"""No query waits for the semantic index beyond its own budget (issue 36): a first query in a
fresh repository once waited up to 20 s, silently, for the model to load, and came back ranked
by words anyway; the pack (the text the model reads) now says why it is ranked by words."""

from __future__ import annotations

import threading

import pytest

from dmm.semantic import service
from dmm.semantic.index import SemanticIndex
from tests.semantic.test_index import _add_store


@pytest.fixture
def stalled_build(monkeypatch):
    """A build of the index that does not finish while the test runs (the model loading on a
    busy machine): ``state`` says what it reports meanwhile."""
    release = threading.Event()
    state = {"pending": None, "total": None}

    def sync(self, conn, progress=None):
        self.pending, self.total = state["pending"], state["total"]
        release.wait(120)
        return 0

    monkeypatch.setattr(SemanticIndex, "sync", sync)
    monkeypatch.setattr(service, "_enabled", True)  # as in `dmm mcp` / the background process
    monkeypatch.setattr(service, "_indexes", {})
    monkeypatch.setattr(service, "_threads", {})
    monkeypatch.delenv(service.WAIT_ENV)  # the budget itself, not the tests' long one
    yield state
    release.set()


def test_a_query_answers_by_words_within_its_budget_and_says_why(repo, stalled_build):
    from dmm.query.run import memory_pack

    _add_store(repo)
    pack = memory_pack(repo.ws, "releases on tuesday", for_model="query")
    # it answered while the build was still under way: it did not wait for it
    assert any(t.is_alive() for t in service._threads.values())
    assert pack.ranking == "words" and pack.retrieved
    note = "ranked by words: the semantic index is being built (the model is loading)"
    assert note in pack.text and pack.notes == [note]
    assert pack.to_dict()["notes"] == [note]


def test_the_note_counts_what_is_embedded(repo, stalled_build):
    from dmm.query.run import memory_pack

    _add_store(repo)
    stalled_build.update(pending=1500, total=2000)
    pack = memory_pack(repo.ws, "releases on tuesday", for_model="prompt")
    assert ("Note: ranked by words: the semantic index is being built (500 of 2,000 memories "
            "embedded)") in pack.text


def test_a_hook_asks_for_less_and_the_environment_for_more(monkeypatch):
    monkeypatch.delenv(service.WAIT_ENV)
    assert service.wait_s() == service.WAIT_S
    token = service.WAIT.set(0.2)
    try:
        assert service.wait_s() == 0.2
        monkeypatch.setenv(service.WAIT_ENV, "0.1")
        assert service.wait_s() == 0.1
    finally:
        service.WAIT.reset(token)
    monkeypatch.setenv(service.WAIT_ENV, "not a number")
    assert service.wait_s() == service.WAIT_S


def test_a_large_store_does_not_wait_for_the_model_at_all(repo, stalled_build, monkeypatch):
    """While the model loads for a store it will take long to embed, every query would wait
    its whole budget for nothing: it answers at once."""
    from dmm.query.run import memory_pack
    from dmm.semantic import model

    for n in range(service.WAIT_FOR_MEMORIES + 1):
        repo.add(f"project/m{n:03d}.md", f"mem_2026_01_02_{n:03d}", f"Release rule {n}",
                 f"Releases happen on tuesday, rule {n}.")
    monkeypatch.setattr(model, "_MODEL", None)
    waited, join = [], threading.Thread.join
    monkeypatch.setattr(threading.Thread, "join", lambda self, timeout=None: (
        waited.append(self.name), join(self, timeout)))
    pack = memory_pack(repo.ws, "releases on tuesday", for_model="query")
    assert waited == [] and "the model is loading" in pack.text
