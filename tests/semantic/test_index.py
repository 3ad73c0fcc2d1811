"""The semantic index: passages, incremental embedding, vectors that survive a cache rebuild,
and hybrid ranking that finds what words miss (a real model on a small store)."""

from __future__ import annotations

import pytest

from dmm.index.refresh import open_fresh, rebuild
from dmm.query.pack import PackOptions, build_pack
from dmm.semantic import chunks, fuse, model
from dmm.semantic.index import SemanticIndex

RANKING = ("Search results are ordered by relevance",
           "The ranker scores every document against the words of the request and sorts the "
           "hits so the most pertinent ones come first; ties are broken by date.")
OTHERS = [("Releases happen on Tuesdays", "We ship a new version every Tuesday morning after "
           "the change log is reviewed by the release manager."),
          ("Use tabs in Makefiles", "Make requires a tab before each command of a recipe; "
           "spaces give a missing separator error."),
          ("Passwords are hashed with Argon2id", "Stored credentials use Argon2id with the "
           "library defaults; never store a password in clear text.")]


def test_passages_are_the_title_then_title_prefixed_word_windows():
    body = "# Title\n\n" + " ".join(f"w{i}" for i in range(85))
    title, *parts = chunks.passages("Title", body)
    assert title == "Title"  # the memory's point, on its own
    assert [p.split(". ", 1)[0] for p in parts] == ["Title"] * len(parts)
    assert len(parts) == 2  # 40 + 45: a short tail (5 words) joins the passage before it
    assert "w84" in parts[-1] and "w0" in parts[0]
    assert chunks.passages("Only a title", "# Only a title\n") == ["Only a title"]
    long = "# T\n" + "word " * 5000
    assert len(chunks.passages("T", long)) == 1 + chunks.MAX_CHUNKS
    # a body too short for a passage of its own still gets one (a tail joins only a passage)
    assert chunks.passages("T", "# T\nshort body") == ["T", "T. short body"]
    # no title: the body's passages alone
    assert chunks.passages("", "one two three") == ["one two three"]


def test_fusion_keeps_lexical_hits_and_adds_meaning():
    fused = fuse.fuse({1: 0.8, 2: 0.1}, {2: 0.7, 3: 0.6, 4: 0.05})
    assert fused[1][0] == pytest.approx((1 - fuse.WEIGHT) * 0.8)
    assert fused[1][1].cosine is None
    assert fused[3][0] > fused[4][0] == 0.0  # below the floor: no semantic part
    assert fused[2][0] > fused[3][0]  # words and meaning beat meaning alone
    assert fuse.semantic_part(fuse.CEILING + 0.1) == 1.0


def _add_store(repo):
    for n, (title, body) in enumerate([RANKING, *OTHERS], 1):
        repo.add(f"project/m{n}.md", f"mem_2026_01_01_00{n}", title, body)


def test_index_embeds_only_what_changed_and_survives_a_rebuild(repo):
    _add_store(repo)
    index = SemanticIndex(repo.ws.shared_state_dir)
    conn, _ = open_fresh(repo.ws)
    assert index.sync(conn) == 4
    assert index.sync(conn) == 0  # nothing changed: not even a look at the texts
    conn.close()
    repo.add("project/m2.md", "mem_2026_01_01_002", "Releases happen on Wednesdays",
             OTHERS[0][1].replace("Tuesday", "Wednesday"))
    conn, _ = open_fresh(repo.ws)
    assert index.sync(conn) == 1
    conn.close()
    conn, _ = rebuild(repo.ws)  # `dmm reindex`: new doc numbers, same texts
    fresh = SemanticIndex(repo.ws.shared_state_dir)
    assert fresh.sync(conn) == 0  # every vector read back from semantic.sqlite3
    sims = fresh.similarity("how are the results of a lookup sorted?")
    assert len(sims) == 4
    conn.close()
    assert max(sims, key=sims.get) == "project/m1.md"


def test_hybrid_pack_finds_a_memory_that_shares_no_word_with_the_task(repo):
    _add_store(repo)
    conn, _ = open_fresh(repo.ws)
    cfg = repo.ws.config["query"]
    task = "what decides which answers appear at the top?"
    lexical = build_pack(conn, task, PackOptions(budget=5000), cfg)
    index = SemanticIndex(repo.ws.shared_state_dir)
    index.sync(conn)
    hybrid = build_pack(conn, task, PackOptions(budget=5000), cfg, semantic=index)
    conn.close()
    assert "project/m1.md" not in [e.memory.path for e in lexical.retrieved]
    assert hybrid.retrieved[0].memory.path == "project/m1.md"
    assert hybrid.ranking == "words+meaning" and lexical.ranking == "words"
    entry = hybrid.retrieved[0].to_dict()
    assert entry["match"]["words"] == 0 and entry["match"]["meaning"] > 0.3


def test_the_model_refuses_weights_that_are_not_the_pinned_ones(tmp_path, monkeypatch):
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    monkeypatch.setattr(model, "model_file", lambda: fake)
    monkeypatch.setattr(model, "_MODEL", None)
    monkeypatch.setattr(model, "_VARIANT", None)  # nothing derived yet: derived from the fake
    monkeypatch.setenv(model.CACHE_ENV, str(tmp_path / "cache"))
    assert "not the pinned file" in model.variant()[2]  # the derivation refused it
    with pytest.raises(model.ModelUnavailable, match="not the pinned file"):
        model.Model()  # and so does the pinned model itself
    assert not list((tmp_path / "cache").glob("**/*.onnx"))


def test_a_machine_without_the_model_answers_by_words_with_one_note(repo, monkeypatch):
    from dmm.query.run import memory_pack
    from dmm import modelcheck
    from dmm.background import client
    from dmm.semantic import service

    _add_store(repo)
    monkeypatch.setattr(modelcheck, "RUNTIME", (*modelcheck.RUNTIME, "dmm_no_such_runtime"))
    answer, note = client.via_background(repo.ws, {"op": "query", "task": "x"})
    assert answer is None and "dmm_no_such_runtime" in note and "by words" in note
    monkeypatch.setattr(service, "_enabled", True)  # as in `dmm mcp` / `dmm serve`
    pack = memory_pack(repo.ws, "releases on tuesday")
    assert pack.ranking == "words" and len(pack.notes) == 1
    assert pack.retrieved[0].memory.path == "project/m2.md"


def test_a_large_store_looks_at_the_passages_of_its_nearest_memories_only(tmp_path):
    import numpy as np

    from dmm.semantic import index as index_mod

    task = "which queue carries the billing events?"
    query = model.load().embed([task])[0]
    rng = np.random.default_rng(3)
    idx = SemanticIndex(None)
    for n in range(index_mod.EXACT_UP_TO + 500):
        vecs = rng.standard_normal((3, model.DIMENSION)).astype(np.float32)
        idx._docs[f"m{n}.md"] = f"k{n}"
        idx._vecs[f"k{n}"] = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(
            np.float16)
    planted = np.stack([query, query, rng.standard_normal(model.DIMENSION)]).astype(np.float32)
    idx._vecs["k77"] = (planted / np.linalg.norm(planted, axis=1, keepdims=True)).astype(
        np.float16)
    idx._stack()
    assert idx._means is not None  # the coarse path
    sims = idx.similarity(task)
    assert len(sims) == index_mod.COARSE_TOP
    assert max(sims, key=sims.get) == "m77.md" and sims["m77.md"] == pytest.approx(1.0, abs=2e-3)
