"""`dmm init`: create the .dmm/ layout in a repository without ever overwriting a user's file;
`dmm init --upgrade`: refresh BOOT.md and the config's comments after upgrading dmm.

Writes only under .dmm/; each file is written atomically (temporary file, then rename). init
writes a file only when it does not exist yet, so running it again changes nothing; upgrade
rewrites BOOT.md and config.toml only when git holds their current text, keeping every setting.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

from dmm import config as config_mod
from dmm.errors import InvalidInputError, NotInitializedError, UnsafeStoreError
from dmm.fsutil import write_atomic, write_new
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
    ws.check_layout()
    result = InitResult(ws.root)
    defaults = config_mod.DEFAULTS
    budget = defaults["query"]["default_budget"]
    # a store that exists (a teammate's clone, a second run) keeps what its team chose: a
    # starter memory they deleted is not brought back
    existing_store = ws.config_path.exists()
    folders = [ws.memory_dir / name for name in (*SCOPES, DEPRECATED_DIR)] + [ws.conflicts_dir]
    for folder in folders:
        if folder.is_symlink():  # writing its .gitkeep would write wherever it points
            raise UnsafeStoreError(f"{folder.relative_to(ws.root).as_posix()} is a symbolic "
                                   "link: dmm writes only inside this repository",
                                   hint="replace the link with a real folder, then run dmm init")
    for folder in folders:
        _write(ws, folder / ".gitkeep", "", result)
    _write(ws, ws.config_path, render("config.toml.j2", c=defaults), result)
    _write(ws, ws.dmm_dir / "BOOT.md", _boot(defaults), result)
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


def _boot(settings: dict) -> str:
    return render("boot.md.j2", budget=settings["query"]["default_budget"],
                  min_tokens=settings["quality"]["min_tokens"],
                  max_tokens=settings["quality"]["max_tokens"])


@dataclass
class UpgradeResult:
    root: Path
    rewritten: list[str] = field(default_factory=list)  # repository-relative paths
    unchanged: list[str] = field(default_factory=list)
    # settings the store sets to something else than this dmm's default: (key, value, default)
    customised: list[tuple[str, object, object]] = field(default_factory=list)
    hooks_installed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"root": str(self.root), "rewritten": self.rewritten, "unchanged": self.unchanged,
                "customised": [{"setting": k, "value": v, "default": d}
                               for k, v, d in self.customised],
                "hooks_installed": self.hooks_installed}


def upgrade(ws: Workspace) -> UpgradeResult:
    """BOOT.md as this dmm version writes it, and config.toml with this version's comments and
    new settings, every value the store sets kept (sections dmm does not own kept verbatim).
    Refuses, changing nothing, when either file holds text git does not have: the upgrade's
    diff must be all there is to review, and nothing uncommitted is ever overwritten."""
    from dmm.gitrepo import Git

    ws.check_layout()
    if not ws.config_path.exists():
        raise NotInitializedError(f"no dmm store in {ws.root}", hint="run `dmm init` first")
    settings = config_mod.load(ws.config_path)  # refuses a config it cannot read or check
    old_config = ws.config_path.read_text(encoding="utf-8")
    targets = {ws.config_path: render("config.toml.j2", c=settings) + _foreign(old_config),
               ws.dmm_dir / "BOOT.md": _boot(settings)}
    git = Git(ws.root)
    rels = {path: path.relative_to(ws.root).as_posix() for path in targets}
    committed = git.blob_ids("HEAD", list(rels.values())) if git.rev_parse("HEAD") else {}
    result = UpgradeResult(ws.root)
    for path, text in targets.items():
        current = path.read_bytes() if path.exists() else None
        if current == text.encode("utf-8"):
            result.unchanged.append(rels[path])
        elif current is not None and committed.get(rels[path]) != git.hash_blob(current):
            raise InvalidInputError(f"{rels[path]} has changes git does not hold; nothing was "
                                    "upgraded", hint="commit (or discard) them first, so that "
                                    "the upgrade's diff is all there is to review")
    for path, text in targets.items():
        if rels[path] not in result.unchanged:
            write_atomic(path, text)
            result.rewritten.append(rels[path])
    for section, values in config_mod.DEFAULTS.items():
        for key, default in values.items():
            if settings[section][key] != default:
                result.customised.append((f"{section}.{key}", settings[section][key], default))
    return result


_SECTION = re.compile(r"^[ \t]*\[+[ \t]*([^\]]+?)[ \t]*\]+[ \t]*(?:#.*)?$", re.M)


def _foreign(config_text: str) -> str:
    """The sections of a config file that dmm does not own (another tool's, the user's), as
    written, to carry over into the upgraded file."""
    heads = list(_SECTION.finditer(config_text))
    kept = [config_text[h.start():(heads[i + 1].start() if i + 1 < len(heads) else None)]
            for i, h in enumerate(heads)
            if h.group(1).split(".")[0].strip().strip('"') not in config_mod.DEFAULTS]
    return "".join("\n" + block.rstrip("\n") + "\n" for block in kept)
