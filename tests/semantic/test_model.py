"""The int8 model derived from the pinned weights: derived once into the cache, found there
afterwards, derived again when its file is missing or corrupt, and the pinned model used where
it cannot be derived (real onnxruntime, real files; each derivation takes a few seconds)."""

from __future__ import annotations

import hashlib
import shutil

import pytest

from dmm.semantic import index, model

TEXTS = ["how are invoices numbered", "Releases happen on Tuesdays. We ship a new version "
         "every Tuesday morning after the change log is reviewed by the release manager."]


@pytest.fixture
def fresh(monkeypatch):
    """A process that has decided nothing yet (no variant chosen, no model loaded)."""
    monkeypatch.setattr(model, "_VARIANT", None)
    monkeypatch.setattr(model, "_MODEL", None)

    def again():
        model._VARIANT = None
        model._MODEL = None
        return model.variant()
    return again


@pytest.fixture
def derived(model_cache):
    """The derived file of this test run (derived here if no test did before)."""
    found = model._find_derived(model_cache / "models", model._derived_stem())
    return found or model._derive(model_cache / "models", model._derived_stem())


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def test_the_first_load_derives_an_int8_model_that_embeds_like_the_pinned_one(
        tmp_path, monkeypatch, fresh):
    monkeypatch.setenv(model.CACHE_ENV, str(tmp_path))
    model_id, path, why = fresh()
    assert (model_id, why) == (model.DERIVED_ID, None)
    assert path.parent == tmp_path / "models" and path.name.endswith(f"-{_digest(path)}.onnx")
    assert model.MODEL_SHA256[:12] in path.name and model.RECIPE in path.name
    assert [p.name for p in (tmp_path / "models").iterdir()] == [path.name]  # no leftovers
    loaded = model.load()
    assert loaded.id == model.DERIVED_ID == model.model_id()
    pinned = model.Model(pinned=True)
    assert pinned.id == model.MODEL_ID
    cosines = (loaded.embed(TEXTS) * pinned.embed(TEXTS)).sum(axis=1)
    assert cosines.min() > model.MIN_PROBE_COSINE
    assert cosines.max() < 0.99999  # a different model: it computes in int8
    # a later process finds the file and does not derive it again
    stat = path.stat()
    assert fresh()[1] == path and path.stat().st_mtime_ns == stat.st_mtime_ns


@pytest.mark.parametrize("damage", ["flipped", "truncated", "missing"])
def test_a_missing_or_corrupt_derived_file_is_derived_again(
        tmp_path, monkeypatch, fresh, derived, damage):
    folder = tmp_path / "models"
    folder.mkdir()
    copy = folder / derived.name
    shutil.copyfile(derived, copy)
    monkeypatch.setenv(model.CACHE_ENV, str(tmp_path))
    if damage == "flipped":
        data = bytearray(copy.read_bytes())
        data[len(data) // 2] ^= 0xFF
        copy.write_bytes(bytes(data))
    elif damage == "truncated":
        copy.write_bytes(copy.read_bytes()[:1000])
    else:
        copy.unlink()
    model_id, path, _why = fresh()
    assert model_id == model.DERIVED_ID
    assert path.name.endswith(f"-{_digest(path)}.onnx")  # whole again
    assert list(folder.glob("*.onnx")) == [path]
    assert model.load().embed(TEXTS).shape == (2, model.DIMENSION)


def test_without_onnx_the_pinned_model_embeds_and_vectors_say_so(
        tmp_path, monkeypatch, fresh):
    monkeypatch.setenv(model.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(model, "DERIVE_NEEDS", ("dmm_no_such_quantizer",))
    model_id, path, why = fresh()
    assert (model_id, path) == (model.MODEL_ID, None) and "dmm_no_such_quantizer" in why
    loaded = model.load()
    assert loaded.id == model.MODEL_ID
    assert loaded.embed(TEXTS) == pytest.approx(model.Model(pinned=True).embed(TEXTS))
    assert not (tmp_path / "models").exists()


def test_an_unwritable_cache_falls_back_to_the_pinned_model(tmp_path, monkeypatch, fresh):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv(model.CACHE_ENV, str(blocker))
    model_id, path, why = fresh()
    assert (model_id, path) == (model.MODEL_ID, None) and "cannot derive" in why
    assert model.load().id == model.MODEL_ID


def test_a_derived_model_that_drifts_from_the_pinned_one_is_not_kept(
        tmp_path, monkeypatch, fresh):
    monkeypatch.setenv(model.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(model, "MIN_PROBE_COSINE", 1.01)  # no quantized model is that close
    model_id, path, why = fresh()
    assert (model_id, path) == (model.MODEL_ID, None) and "drift" in why
    assert list(tmp_path.glob("**/*.onnx")) == [] and list(tmp_path.glob("models/.*")) == []


def test_the_switch_asks_for_the_pinned_model(tmp_path, monkeypatch, fresh):
    monkeypatch.setenv(model.CACHE_ENV, str(tmp_path))
    monkeypatch.setenv(model.INT8_SWITCH, "off")
    assert fresh()[:2] == (model.MODEL_ID, None)
    assert not (tmp_path / "models").exists()


def test_a_worker_with_another_model_refuses_to_embed(tmp_path, monkeypatch, fresh, derived):
    monkeypatch.setenv(model.CACHE_ENV, str(derived.parent.parent))
    assert fresh()[0] == model.DERIVED_ID
    vecs, counts = index._embed_batch([TEXTS, TEXTS[:1]], model_id=model.DERIVED_ID)
    assert vecs.shape == (3, model.DIMENSION) and counts == [2, 1]
    with pytest.raises(model.ModelUnavailable, match="not all-MiniLM-L6-v2-int8$"):
        index._embed_batch([TEXTS], model_id=model.MODEL_ID)


def test_an_int8_vector_is_a_function_of_its_text_alone(monkeypatch, fresh, derived):
    """The int8 model quantizes a product's input with one scale per batch: it embeds one
    text at a time, so a passage gets the same vector whatever was embedded beside it."""
    monkeypatch.setenv(model.CACHE_ENV, str(derived.parent.parent))
    loaded = model.load()
    assert loaded.id == model.DERIVED_ID
    alone = loaded.embed(TEXTS[:1])
    among = loaded.embed(["a much longer neighbour " * 12, TEXTS[1], TEXTS[0]])
    assert (alone[0] == among[2]).all()
    batched = loaded.embed(["a much longer neighbour " * 12, TEXTS[0]], batch=16)
    assert (batched[1] != alone[0]).any()  # what embedding in batches would do


def test_reindex_says_which_model_embedded_and_why_the_slower_one(repo, model_cache):
    import json

    repo.add("project/releases.md", "mem_2025_01_01_aaaaaa", "Releases happen on Tuesdays",
             "We ship a new version every Tuesday morning after the change log is reviewed.")
    fast = repo.dmm("reindex", "--json")
    assert fast.returncode == 0, fast.stderr
    assert json.loads(fast.stdout)["model"] == model.DERIVED_ID
    assert "float32" not in fast.stderr
    slow = repo.dmm("reindex", env={model.INT8_SWITCH: "off"})
    assert slow.returncode == 0, slow.stderr
    assert "1 memory embedded" in slow.stderr  # another model: its vectors are computed anew
    assert "float32 model" in slow.stderr and f"{model.INT8_SWITCH}=off" in slow.stderr
    again = repo.dmm("reindex", "--json", env={model.INT8_SWITCH: "off"})
    assert json.loads(again.stdout)["model"] == model.MODEL_ID
    assert json.loads(again.stdout)["embedded"] == 0  # the pinned model's vectors are cached


def test_the_next_derivation_clears_what_killed_ones_left(tmp_path, monkeypatch, fresh):
    """A `dmm mcp` killed while deriving leaves its work folder (20-60 MB): the next derivation
    removes those whose process is gone, and any older than the bound, and keeps a live one's."""
    import os
    import subprocess
    import time

    folder = tmp_path / "models"
    folder.mkdir()
    ended = subprocess.Popen(["true"])
    ended.wait()
    running = subprocess.Popen(["sleep", "120"])
    try:
        left = {name: folder / name for name in (
            f".derive-{ended.pid}-abc", f".derive-{running.pid}-def", ".derive-old")}
        for path in left.values():
            path.mkdir()
            (path / "folded.onnx").write_bytes(b"x" * 1000)
        old = time.time() - model.STALE_DERIVATION_S - 60
        os.utime(left[".derive-old"], (old, old))
        monkeypatch.setenv(model.CACHE_ENV, str(tmp_path))
        model_id, path, _why = fresh()  # nothing derived in this folder: derived now
        assert model_id == model.DERIVED_ID and path.parent == folder
        assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".derive-")) == [
            f".derive-{running.pid}-def"]
    finally:
        running.kill()
        running.wait()
