"""Settings from .dmm/config.toml over documented defaults (docs/configuration.md).

Reading the file is the only IO; unknown keys and wrong types are reported as errors that name
the key, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

from dmm.errors import InvalidInputError

DEFAULTS: dict[str, dict[str, Any]] = {
    "query": {
        "default_budget": 1200,  # tokens, when --budget is not given
        "min_relevance": 0.05,  # memories scoring below this are never packed
        "priority_weight": 0.3,  # share of the rank that comes from the memory's priority
        "expansion": True,  # also match related words (lexicon of word neighbours)
        "expansion_min_similarity": 0.7,
        "expansion_weight": 0.5,
    },
    "store": {
        "max_file_bytes": 262_144,  # larger memory files are reported, not read
        "ephemeral_max_days": 30,  # an ephemeral note older than this, with no expires: reported
    },
    "quality": {
        "min_tokens": 30,  # shorter cannot carry its context and its reason
        "max_tokens": 800,  # longer crowds a pack: two thirds of the default budget
    },
    "review": {
        "duplicate_threshold": 0.92,  # similarity at which a proposal is rejected as duplicate
        "similar_threshold": 0.85,  # similarity at which the reviewer warns
        "defer_below_confidence": 0.6,  # less sure than this: a person decides
    },
    "conflicts": {
        "min_confidence": 0.5,  # conflicts below this confidence are not reported
        "pair_similarity": 0.08,  # less similar pairs are not compared (alternatives aside)
        "duplicate_similarity": 0.45,  # same scope and this similar: duplicate
        "scope_overlap_similarity": 0.3,  # two scopes and this similar: scope overlap
        "anchor_similarity": 0.3,  # this share of code, names and values in common: a copy
        "value_similarity": 0.1,  # this similar and different values: contradiction
        "negation_similarity": 0.15,  # this similar and one forbids what the other states
        "temporal_similarity": 0.12,  # this similar and the newer records a change: stale
        "tag_overlap": 0.4,  # tag Jaccard that counts as evidence of a shared subject
        "skip_ephemeral_pairs": True,  # two ephemeral notes may disagree: not reported
        # `dmm conflicts resolve --auto`
        "auto_min_confidence": 0.6,  # conflicts detected less surely are left for a person
        "auto_age_days": 30,  # contradictions this far apart in time: the newer one wins
        "auto_priority_gap": 0.2,  # a priority this much higher is "clearly more trusted"
    },
    "narrative": {  # `dmm conflicts scan --narrative` (docs/conflicts.md#the-narrative-pass)
        "batch_tokens": 6000,  # the story is sent in batches of at most this many tokens
        "overlap_tokens": 1000,  # each batch repeats this much of the one before (< half)
    },
    "semantic": {
        "enabled": True,  # rank and compare by meaning too (a local model; docs/semantic.md)
        "background": True,  # the CLI and hooks ask a per-repository background process
        "idle_minutes": 30,  # the background process exits after this long without a request
        # the work trees whose index and postings the background process keeps in memory at
        # once (the least recently asked of is dropped and read again when next asked of)
        "resident_worktrees": 4,
    },
    "usage": {
        "enabled": True,  # log each `dmm query` in <git-common-dir>/dmm/usage.sqlite3
    },
    "team": {
        # the only authority for "landed" (docs/team.md): "" = the remote and branch this
        # clone tracks; with no remote, this clone's own main branch
        "remote": "",
        "main_branch": "",
    },
    "agents": {
        "hook_budget": 800,  # tokens of the pack an agent hook adds to each prompt
        "hook_max_chars": 9500,  # Claude Code passes about 10,000 characters of hook output
    },
    "ci": {
        # `dmm ci check` on a pull request: an undecided conflict with a memory it adds or
        # changes fails the check (false: a warning), read from the base branch's settings
        "fail_on_new_conflicts": True,
    },
    "judge": {
        # a language model the person chose judges candidate conflicts (docs/conflicts.md#the-
        # judge); off, no memory text leaves the machine and dmm detects by its rules alone
        "enabled": False,
        "model": "",  # an `llm` model id or alias; "": none
        "timeout": 30.0,  # seconds per call (the seed's llm_timeout)
        "max_pairs": 200,  # pairs sent to the model per scan; the rest wait for the next one
        "max_tokens": 300_000,  # tokens (estimated) sent per scan
        "k": 5,  # nearest memories judged per changed memory (docs/conflicts.md says why)
        "use_rule_extraction": False,  # every scan judges (the hooks' too), not only on request
        "use_llm_validation": False,  # the seed's name for turning the judge on for reviews
    },
    "scan": {  # conflict scans on a schedule (seed 000 ScanConfig; docs/conflicts.md)
        # the long-lived processes (the background process, `dmm serve`) scan the whole
        # store again when its last full scan is older than periodic_interval_hours
        "periodic_enabled": True,
        "periodic_interval_hours": 24,
        "scan_at_startup": True,  # they bring the scan up to date as they start
        "incremental_on_commit": True,  # git's post-commit hook scans what the commit changed
    },
}

# The seed's names for [judge] settings (PRD 001 section 6): read as the settings they name.
ALIASES: dict[str, dict[str, str]] = {"judge": {"llm_model": "model", "llm_timeout": "timeout"}}


# Allowed ranges of the numeric settings (inclusive); a value outside is an error that names
# the key, never a silent "245 of -5 tokens" or a threshold that hides everything.
RANGES: dict[str, tuple[float, float]] = {
    "query.default_budget": (1, 1_000_000),
    "query.expansion_weight": (0.0, 1.0),
    "store.max_file_bytes": (256, 16 * 1024 * 1024),
    "store.ephemeral_max_days": (0, 100_000),
    "quality.min_tokens": (0, 100_000),
    "quality.max_tokens": (1, 1_000_000),
    "conflicts.auto_age_days": (0, 100_000),
    "agents.hook_budget": (1, 1_000_000),
    "semantic.idle_minutes": (1, 10_080),
    "semantic.resident_worktrees": (1, 1000),
    "agents.hook_max_chars": (200, 1_000_000),
    "narrative.batch_tokens": (500, 1_000_000),
    "narrative.overlap_tokens": (0, 500_000),
    "judge.timeout": (0.1, 3600),
    "judge.max_pairs": (0, 1_000_000),
    "judge.max_tokens": (0, 1_000_000_000),
    "judge.k": (1, 50),
    "scan.periodic_interval_hours": (1, 8760),
}
_SHARES = (0.0, 1.0)  # every other numeric setting is a share, a similarity or a confidence
MAX_BYTES = 1024 * 1024  # a settings file is a few KB; a larger one is not dmm's


def load(path: Path) -> dict[str, dict[str, Any]]:
    """Defaults overlaid with the file at ``path`` (which may be missing)."""
    from dmm.fsutil import UnreadableFile, read_regular

    try:
        raw = read_regular(path, MAX_BYTES)
    except FileNotFoundError:
        return copy.deepcopy(DEFAULTS)
    except UnreadableFile as exc:
        raise InvalidInputError(f"{path} cannot be read: {exc}",
                                hint="dmm's settings are a TOML file in the repository") from None
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return parse(raw, str(path))


def parse(raw: bytes | None, path: str) -> dict[str, dict[str, Any]]:
    """Defaults overlaid with the settings file's bytes (None: no file); ``path`` names it in
    errors. For a file read from a commit (the settings a branch had) as from the work tree."""
    config = copy.deepcopy(DEFAULTS)
    if raw is None:
        return config
    if len(raw) > MAX_BYTES:
        raise InvalidInputError(f"{path} cannot be read: larger than {MAX_BYTES} bytes")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path}: not valid TOML: {exc}") from exc
    except RecursionError:
        raise InvalidInputError(f"{path}: not valid TOML: nested too deeply") from None
    for section, values in data.items():
        if section not in DEFAULTS:
            continue  # sections owned by later features or by the user's tools
        if not isinstance(values, dict):
            raise InvalidInputError(f"{path}: [{section}] must be a table")
        for key, value in _canonical(path, section, values).items():
            if key not in DEFAULTS[section]:
                raise InvalidInputError(f"{path}: unknown setting {section}.{key}",
                                        hint=f"known: {', '.join(DEFAULTS[section])}")
            default = DEFAULTS[section][key]
            ok = (isinstance(value, bool) if isinstance(default, bool)
                  else isinstance(value, str) if isinstance(default, str)
                  else isinstance(value, (int, float)) and not isinstance(value, bool))
            if not ok:
                raise InvalidInputError(
                    f"{path}: {section}.{key} must be {type(default).__name__}, got {value!r}")
            if isinstance(default, str):
                check = _check_model if section == "judge" else _check_name
                check(path, f"{section}.{key}", value)
            elif not isinstance(default, bool):
                low, high = RANGES.get(f"{section}.{key}", _SHARES)
                if isinstance(default, int) and not isinstance(value, int):
                    raise InvalidInputError(f"{path}: {section}.{key} must be a whole number, "
                                            f"got {value!r}")
                if not low <= value <= high:
                    raise InvalidInputError(f"{path}: {section}.{key} = {value!r} is outside "
                                            f"{low} - {high}")
            config[section][key] = value
    if config["quality"]["min_tokens"] > config["quality"]["max_tokens"]:
        raise InvalidInputError(f"{path}: quality.min_tokens is above quality.max_tokens")
    if 2 * config["narrative"]["overlap_tokens"] >= config["narrative"]["batch_tokens"]:
        raise InvalidInputError(f"{path}: narrative.overlap_tokens must be under half of "
                                "narrative.batch_tokens (each batch must bring new facts)")
    return config


def _canonical(path: str, section: str, values: dict) -> dict:
    """``values`` with the seed's names of settings (ALIASES) read as dmm's; both names of one
    setting in one file is an error, never a silent choice between them."""
    aliases = ALIASES.get(section, {})
    out = {}
    for key, value in values.items():
        name = aliases.get(key, key)
        if name in out:
            raise InvalidInputError(f"{path}: {section}.{name} is set twice (as {key} too)",
                                    hint="keep one of the two names")
        out[name] = value
    return out


def _check_model(path: str, key: str, value: str) -> None:
    """A model id or alias as `llm models` lists them (gpt-4o-mini, llama3.2:latest,
    mlx-community/Llama-3.2-3B-Instruct-4bit): no spaces, quotes or control characters."""
    import re

    if value and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}", value):
        raise InvalidInputError(f"{path}: {key} = {value!r} is not a model id",
                                hint="`llm models` lists the ids and aliases of the models "
                                     "installed")


def _check_name(path: Path, key: str, value: str) -> None:
    """A remote or branch name: what `git check-ref-format` would take as one path segment
    or a branch name, and never an option (a leading "-") or a ref outside refs/heads."""
    import re

    if value and (value.startswith(("-", "/", "refs/")) or ".." in value
                  or not re.fullmatch(r"[A-Za-z0-9._/-]{1,200}", value)
                  or value.endswith((".", "/", ".lock"))):
        raise InvalidInputError(f"{path}: {key} = {value!r} is not a git name",
                                hint="a remote like origin, a branch like main")
