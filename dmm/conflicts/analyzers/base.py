"""What every analyzer is given: the ScanContext of one scan.

Below the analyzer modules (each imports it) and below the package's registry, which imports
them: no analyzer imports its own package.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the features (and every cue list) load only when a scan runs
    from dmm.conflicts.features import Features


@dataclass
class ScanContext:
    features: dict[str, Features]  # every memory of the store, deprecated ones included
    pairs: list[tuple[str, str, float]]  # (a, b, cosine) candidate pairs of active memories
    focus: set[str]  # memory ids this scan is about (all of them for a full scan)
    config: dict = field(default_factory=dict)  # the [conflicts] section
    # {(a, b): usage.together.Together}: pairs the queries often return together (co_retrieval)
    together: dict = field(default_factory=dict)
