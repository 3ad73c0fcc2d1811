"""The judge's settings: ``[judge]`` of .dmm/config.toml (dmm/config.py checks the values),
with the seed's names (use_rule_extraction, use_llm_validation, llm_model, llm_timeout).

config.toml is the repository's: a teammate's or a branch's commit can change it, and what a
repository holds never decides (docs/guarantees.md). So the judge it turns on runs only on a
clone whose person allowed that model: ``git config dmm.judge MODEL`` (this clone's
.git/config, or their global git config; no commit can set either). Without it the judge is
off, and ``blocked`` says how to allow it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
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
    blocked: str | None = None  # why a judge the config turns on is off here


    @property
    def ready(self) -> bool:
        """On and naming a model: whether asking is worth trying."""
        return self.enabled and bool(self.model)


CONSENT_KEY = "dmm.judge"  # git config: the model this person allows on this clone


def judge_settings(source: Any) -> JudgeSettings:
    """The settings from a Workspace, a whole config (as dmm.config.load returns it) or its
    ``[judge]`` table. The seed's switches turn the judge on for their use; ``enabled`` turns
    it on for every use (then the reviewer asks it too). From a Workspace, the judge is on
    only when this clone's git config allows its model (the module's docstring says why)."""
    settings = _read(source)
    if settings.ready and hasattr(source, "root"):
        allowed = _allowed(source.root)
        if allowed != settings.model:
            return replace(settings, enabled=False, use_llm_validation=False, blocked=(
                f"the store's config turns the judge on with the model {settings.model}, "
                f"which this clone has not allowed: run `git config {CONSENT_KEY} "
                f"{settings.model}` to let memory text go to it"
                + (f" (allowed now: {allowed})" if allowed else "")))
    return settings


def _allowed(root) -> str | None:
    """The model this clone's person allowed (git config dmm.judge), or None."""
    from dmm.gitrepo import Git

    proc = Git(root).run("config", "--get", CONSENT_KEY, check=False)
    return (proc.stdout.strip() or None) if proc.returncode == 0 else None


def _read(source: Any) -> JudgeSettings:
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
