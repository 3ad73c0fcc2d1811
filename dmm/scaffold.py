"""`dmm init`: create the .dmm/ layout in a repository without ever overwriting a user's file.

Writes only under .dmm/; each file is written atomically (temporary file, then rename) and only
when it does not exist yet, so running init again changes nothing.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from dmm import config as config_mod
from dmm.fsutil import write_new
from dmm.index.db import INDEX_GITIGNORE
from dmm.memory.model import DEPRECATED_DIR, SCOPES
from dmm.render import render
from dmm.workspace import Workspace

STARTER_PATH = "baseline/dmm_usage.md"


@dataclass
class InitResult:
    root: Path
    created: list[str] = field(default_factory=list)  # paths relative to the repository root
    existing: list[str] = field(default_factory=list)
    hooks_installed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"root": str(self.root), "created": self.created, "existing": self.existing,
                "hooks_installed": self.hooks_installed,
                "changed": bool(self.created or self.hooks_installed)}


def init(ws: Workspace, today: dt.date | None = None) -> InitResult:
    today = today or dt.date.today()
    result = InitResult(ws.root)
    defaults = config_mod.DEFAULTS
    budget = defaults["query"]["default_budget"]
    # a store that exists (a teammate's clone, a second run) keeps what its team chose: a
    # starter memory they deleted is not brought back
    existing_store = ws.config_path.exists()
    folders = [ws.memory_dir / name for name in (*SCOPES, DEPRECATED_DIR)] + [ws.conflicts_dir]
    for folder in folders:
        _write(ws, folder / ".gitkeep", "", result)
    _write(ws, ws.index_dir / ".gitignore", INDEX_GITIGNORE, result)
    _write(ws, ws.config_path, render("config.toml.j2", c=defaults), result)
    _write(ws, ws.dmm_dir / "BOOT.md",
           render("boot.md.j2", budget=budget, min_tokens=defaults["quality"]["min_tokens"],
                  max_tokens=defaults["quality"]["max_tokens"]), result)
    if not existing_store and not any((ws.memory_dir / "baseline").rglob("*.md")):
        memory_id = f"mem_{today:%Y_%m_%d}_001"
        _write(ws, ws.memory_dir / STARTER_PATH,
               render("starter_baseline.md.j2", memory_id=memory_id, today=today.isoformat(),
                      budget=budget), result)
    return result


def _write(ws: Workspace, path: Path, text: str, result: InitResult) -> None:
    rel = path.relative_to(ws.root).as_posix()
    if not path.exists() and write_new(path, text):
        result.created.append(rel)
    else:
        result.existing.append(rel)
