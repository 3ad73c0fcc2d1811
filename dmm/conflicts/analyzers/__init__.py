"""Conflict analyzers, one module each, all behind one interface.

An analyzer is a module with ``NAME`` (its detection method) and
``analyze(ctx) -> list[Candidate]``. ``ctx`` (a ScanContext) holds the features of every
memory in the scan, the pairs worth comparing (``ctx.pairs``: similar enough, both active, not
both ephemeral) and the ids the scan is about (``ctx.focus``).

Layers: base.py (ScanContext) is below the analyzer modules, which import it; this package's
``registry`` is above them and imports them when a scan runs.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

# re-exported: the analyzers import it from base.py, below this package's registry
from dmm.conflicts.analyzers.base import ScanContext  # noqa: F401


# Bump when a change to the analyzers changes what they report: caches scanned by an older
# version (or with other settings) then rescan everything instead of keeping stale verdicts.
VERSION = 25


# the fitted confidence weights (calibration.py): refitting them changes what is reported too
_WEIGHTS = Path(__file__).resolve().parent.parent / "data" / "weights.json"


def fingerprint(config: dict) -> str:
    """What detection results depend on besides the memories: analyzer version, fitted
    weights and settings."""
    settings = {k: v for k, v in config.items() if not k.startswith("auto_")}
    data = json.dumps([VERSION, settings], sort_keys=True).encode() + _WEIGHTS.read_bytes()
    # checksums, not a cryptographic hash: they only tell that something changed, and every
    # `conflicts list` computes them (hashlib would load OpenSSL for it: 3 ms)
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def registry() -> dict:
    from dmm.conflicts.analyzers import (alternatives, co_retrieval, negation, semantic,
                                         supersession, tag_overlap, temporal, value_change)

    # co_retrieval reads how the store is used (the usage log), the others its text
    return {m.NAME: m for m in (supersession, semantic, value_change, negation, alternatives,
                                temporal, tag_overlap, co_retrieval)}
