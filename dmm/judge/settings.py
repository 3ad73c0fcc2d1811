"""The judge's settings: ``[judge]`` of .dmm/config.toml (dmm/config.py checks the values),
with the seed's names (use_rule_extraction, use_llm_validation, llm_model, llm_timeout)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dmm.config import DEFAULTS

_D = DEFAULTS["judge"]


@dataclass(frozen=True)
class JudgeSettings:
    enabled: bool = False  # the judge may be asked at all (any of the three switches)
    model: str | None = None  # an `llm` model id or alias
    timeout: float = float(_D["timeout"])  # seconds per call
    max_pairs: int = _D["max_pairs"]  # pairs sent per scan
    max_tokens: int = _D["max_tokens"]  # tokens (estimated) sent per run
    k: int = _D["k"]  # nearest memories judged per changed memory
    use_rule_extraction: bool = False  # every scan judges, not only when asked
    use_llm_validation: bool = False  # the reviewer asks the judge about proposals

    @property
    def ready(self) -> bool:
        """On and naming a model: whether asking is worth trying."""
        return self.enabled and bool(self.model)


def judge_settings(source: Any) -> JudgeSettings:
    """The settings from a Workspace, a whole config (as dmm.config.load returns it) or its
    ``[judge]`` table. The seed's switches turn the judge on for their use; ``enabled`` turns
    it on for every use (then the reviewer asks it too)."""
    config = getattr(source, "config", source)
    table = config.get("judge", config) if isinstance(config, dict) else {}
    values = {**_D, **table}
    enabled = bool(values["enabled"] or values["use_rule_extraction"]
                   or values["use_llm_validation"])
    return JudgeSettings(enabled=enabled, model=values["model"] or None,
                         timeout=float(values["timeout"]), max_pairs=int(values["max_pairs"]),
                         max_tokens=int(values["max_tokens"]), k=int(values["k"]),
                         use_rule_extraction=bool(values["use_rule_extraction"]),
                         use_llm_validation=enabled)
