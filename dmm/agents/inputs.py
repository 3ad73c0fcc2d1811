"""The one check every value an agent or an HTTP client sends passes before any core call:
where input enters `dmm serve` (path, query string, JSON body) and `dmm mcp` (tool arguments,
resource names). What no file name, id or text of dmm can hold is refused here with a clear
message, instead of surfacing deep inside as an OSError, a ValueError from the C library or a
UnicodeEncodeError (an HTTP 500 or an MCP "internal error").

- a NUL character anywhere (no path, id, git argument or commit message can carry one);
- a lone surrogate anywhere (not Unicode text: it cannot be written as UTF-8);
- in names (ids, paths, refs): control characters, and a path part over 255 bytes (the
  file-system limit, met before any path cleaning would say why);
- nesting deeper than MAX_DEPTH (a JSON body is parsed first; see ``parse_json``, and
  ``load_bounded`` for the lines `dmm mcp` and the background process read).

Pure: raises InvalidInputError, returns nothing.
"""

from __future__ import annotations

import json
from typing import Any

from dmm.errors import InvalidInputError

MAX_DEPTH = 32  # no request of the API nests deeper than 3
MAX_PART_BYTES = 255
# fields whose value names a file, a memory, a proposal, a conflict or a commit
NAMES = frozenset({"path", "memory", "memory_id", "memory_ids", "memory_id_or_path",
                   "target", "target_memory_id", "path_prefix", "proposal_id", "conflict_id",
                   "since", "scope", "scopes", "new_scope", "tag", "tags", "ids", "paths",
                   "memories", "key"})


def check(value: Any, where: str, *, name: bool = False, depth: int = 0) -> None:
    """Refuse what no dmm id, path or text can hold, anywhere in ``value``; ``name``: the value
    names something (a path, an id)."""
    if depth > MAX_DEPTH:
        raise InvalidInputError(f"{where} is nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        _check_text(value, where, name)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(str(key), f"{where} key", True)
            check(item, f"{where}.{key}" if where else str(key),
                  name=name or key in NAMES, depth=depth + 1)
    elif isinstance(value, (list, tuple)):
        for n, item in enumerate(value):
            check(item, f"{where}[{n}]", name=name, depth=depth + 1)


def _check_text(text: str, where: str, name: bool) -> None:
    if "\x00" in text:
        raise InvalidInputError(f"{where} contains a NUL character: not text dmm can store")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"{where} contains a lone surrogate (U+{ord(text[exc.start]):04X}"
                                f") at character {exc.start}: not valid Unicode text") from None
    if not name:
        return
    if any(ord(c) < 0x20 or c == "\x7f" for c in text):
        raise InvalidInputError(f"{where} contains a control character (a newline, a tab, an "
                                "escape ...): ids and paths are plain names")
    for part in text.split("/"):
        if len(part.encode("utf-8")) > MAX_PART_BYTES:
            raise InvalidInputError(f"{where} has a part of {len(part.encode('utf-8'))} bytes: "
                                    f"a file name holds at most {MAX_PART_BYTES}")


class TooDeep(InvalidInputError):
    """A JSON document nested deeper than MAX_DEPTH levels."""


def parse_json(raw: bytes, where: str = "the request body") -> Any:
    """A JSON document, refused (never a RecursionError) when it nests too deeply."""
    try:
        data = load_bounded(raw.decode("utf-8"), where)
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInputError(f"{where} is not valid JSON: {exc}") from None
    check(data, "")
    return data


def load_bounded(raw: str | bytes, where: str = "the request") -> Any:
    """``json.loads(raw)``, but a document nested deeper than MAX_DEPTH is refused (TooDeep)
    instead of parsed: Python's parser recurses, and 1,000 levels raise RecursionError, which
    kills the thread that reads a stream. ValueError for what is not JSON, as json.loads."""
    try:
        data = json.loads(raw)
    except RecursionError:
        raise TooDeep(f"{where} is nested deeper than {MAX_DEPTH} levels") from None
    if _depth_over(data, MAX_DEPTH):
        raise TooDeep(f"{where} is nested deeper than {MAX_DEPTH} levels")
    return data


def _depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests deeper than ``limit`` (a walk without recursion)."""
    todo = [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict):
            item = list(item.values())
        elif not isinstance(item, list):
            continue
        if depth >= limit:
            return True
        todo.extend((child, depth + 1) for child in item)
    return False
