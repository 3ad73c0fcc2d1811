"""Validation rules for memory frontmatter and for the store as a whole. Pure functions.

Every rule reports a Problem naming the file and the field; nothing stops at the first problem.
Errors make a file unusable (it is left out of the index); warnings are shown but the memory is
still used.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections import defaultdict
from typing import Any, Iterable

from dmm.memory.model import (CONFIDENCES, DEPRECATED_DIR, ID_PATTERN, KNOWN_FIELDS, MAX_TAGS,
                              REQUIRED_FIELDS, SCOPES, STATUSES, Memory, Problem)

_ID = re.compile(ID_PATTERN, re.ASCII)


def validate_fields(meta: dict[str, Any], path: str) -> tuple[dict[str, Any], list[Problem]]:
    """Check a frontmatter mapping; return the typed values of the Memory fields and problems."""
    problems: list[Problem] = []

    def err(field: str, message: str, severity: str = "error") -> None:
        problems.append(Problem(path, message, field, severity))

    for name in REQUIRED_FIELDS:
        if meta.get(name) is None:
            err(name, f"required field '{name}' is missing" + (
                " (an id looks like mem_YYYY_MM_DD_NNN: mem_2026_03_14_001, unique in the "
                "store)" if name == "id" else ""))
    for name in meta:
        if str(name) not in KNOWN_FIELDS:
            close = difflib.get_close_matches(str(name), KNOWN_FIELDS, n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            err(str(name), f"unknown field '{name}'{hint}", "warning")

    values: dict[str, Any] = {}
    mem_id = meta.get("id")
    if mem_id is not None:
        if not isinstance(mem_id, str) or not _ID.fullmatch(mem_id):
            err("id", f"id {mem_id!r} must look like mem_YYYY_MM_DD_NNN or mem_YYYY_MM_DD_xxxxxx "
                       "(six of 0-9 and a-z without i, l, o, u)")
        values["id"] = str(mem_id)

    values["tags"] = _check_list(meta.get("tags"), "tags", err, required=True)
    if meta.get("tags") is not None and not values["tags"] and isinstance(meta["tags"], list):
        err("tags", "tags must list at least one tag")
    if len(values["tags"]) > MAX_TAGS:
        err("tags", f"tags lists {len(values['tags'])} tags; at most {MAX_TAGS} are allowed")

    for name, allowed in (("scope", SCOPES), ("confidence", CONFIDENCES), ("status", STATUSES)):
        value = meta.get(name)
        if value is not None and value not in allowed:
            err(name, f"{name} {value!r} is not one of: {', '.join(allowed)}")
        values[name] = str(value) if value is not None else ""

    priority = meta.get("priority")
    values["priority"] = 0.0
    if priority is not None:
        if isinstance(priority, bool) or not isinstance(priority, (int, float)):
            err("priority", f"priority {priority!r} must be a number between 0.0 and 1.0")
        elif not -1 <= priority <= 2 or not 0.0 <= float(priority) <= 1.0:
            shown = str(priority) if len(str(priority)) < 20 else str(priority)[:16] + "..."
            err("priority", f"priority {shown} is outside 0.0 - 1.0")
        else:
            values["priority"] = float(priority)

    for name in ("created", "expires"):
        values[name] = _check_date(meta.get(name), name, err)
    for name in ("supersedes", "related"):
        ids = _check_list(meta.get(name), name, err, required=False)
        for other in ids:
            if not _ID.fullmatch(other):
                err(name, f"{other!r} in {name} does not look like a memory id", "warning")
        values[name] = ids

    problems.extend(check_location(path, values.get("scope", ""), values.get("status", "")))
    return values, problems


def check_location(path: str, scope: str, status: str) -> list[Problem]:
    """The folder a memory lives in must agree with its scope and status."""
    parts = path.split("/")
    folder = parts[0] if len(parts) > 1 else None
    if folder is None:
        return [Problem(path, "memory files must live in a scope folder "
                              f"({', '.join(SCOPES)}) or {DEPRECATED_DIR}/", "scope")]
    if folder == DEPRECATED_DIR:
        if status == "active":
            return [Problem(path, f"a memory in {DEPRECATED_DIR}/ should have status: deprecated",
                            "status", "warning")]
        return []
    if folder not in SCOPES:
        return [Problem(path, f"folder '{folder}/' is not a scope folder "
                              f"({', '.join(SCOPES)}) or {DEPRECATED_DIR}/", "scope")]
    out = []
    if scope and scope in SCOPES and scope != folder:
        out.append(Problem(path, f"scope '{scope}' does not match its folder '{folder}/'", "scope"))
    if status == "deprecated":
        out.append(Problem(path, f"deprecated memories belong in {DEPRECATED_DIR}/",
                           "status", "warning"))
    return out


def check_store(memories: Iterable[Memory]) -> list[Problem]:
    """Store-wide rules: ids are unique across all files."""
    by_id: dict[str, list[str]] = defaultdict(list)
    for memory in memories:
        by_id[memory.id].append(memory.path)
    problems = []
    for mem_id, paths in by_id.items():
        if len(paths) > 1:
            for path in paths:
                others = ", ".join(p for p in paths if p != path)
                problems.append(Problem(path, f"duplicate id {mem_id} (also in {others})", "id"))
    return problems


def _check_list(value: Any, name: str, err, required: bool) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        if required:
            err(name, f"{name} must be a YAML list, e.g. {name}: [a, b]")
            return [v.strip() for v in value.split(",") if v.strip()]
        return [value]
    if not isinstance(value, list):
        err(name, f"{name} must be a list")
        return []
    out = []
    for item in value:
        if isinstance(item, (dict, list)) or item is None:
            err(name, f"{name} entries must be plain words, not {item!r}")
        else:
            out.append(str(item))
    return out


def _check_date(value: Any, name: str, err) -> dt.date | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        err(name, f"{name} {value!r} is not a date (YYYY-MM-DD)")
        return None
