"""Conflict analyzers, one module each, all behind one interface.

An analyzer is a module with ``NAME`` (its detection method) and
``analyze(ctx) -> list[Candidate]``. ``ctx`` (a ScanContext) holds the features of every
memory in the scan, the pairs worth comparing (``ctx.pairs``: similar enough, both active, not
both ephemeral) and the ids the scan is about (``ctx.focus``).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the features (and every cue list) load only when a scan runs
    from dmm.conflicts.features import Features


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


@dataclass
class ScanContext:
    features: dict[str, Features]  # every memory of the store, deprecated ones included
    pairs: list[tuple[str, str, float]]  # (a, b, cosine) candidate pairs of active memories
    focus: set[str]  # memory ids this scan is about (all of them for a full scan)
    config: dict = field(default_factory=dict)  # the [conflicts] section
    # {(a, b): usage.together.Together}: pairs the queries often return together (co_retrieval)
    together: dict = field(default_factory=dict)


def registry() -> dict:
    from dmm.conflicts.analyzers import (alternatives, negation, semantic, supersession,
                                         tag_overlap, temporal, value_change)

    return {m.NAME: m for m in (supersession, semantic, value_change, negation, alternatives,
                                temporal, tag_overlap)} | _usage_methods()


def _usage_methods() -> dict:
    """The methods that read how the store is used (the usage log), not its text."""
    from dmm.conflicts.analyzers import co_retrieval

    return {co_retrieval.NAME: co_retrieval}
