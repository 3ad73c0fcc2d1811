"""Parse one memory file's text into a Memory, collecting every problem instead of stopping.

Frontmatter is the YAML between a first line ``---`` and the next ``---`` line; the title is the
first ``# `` heading of the body. Validation of each field lives in validate.py; this module
only splits the file and builds the record.
"""

from __future__ import annotations

import re

import yaml

from dmm.memory.model import Memory, Problem
from dmm.memory.tokens import count_tokens
from dmm.memory.validate import validate_fields

_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.S | re.M)
_TITLE = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.M)
MAX_FRONTMATTER_CHARS = 16_384
MAX_NESTING = 8


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe YAML that keeps dates as text: `created` and `expires` are checked by validate.py,
    so an impossible date ("2026-02-30") is a problem of the file, not an exception. A key
    given twice is refused: YAML readers disagree on which one counts (PyYAML keeps the last),
    so a reviewer reading the diff could see `status: active` where dmm reads the other."""

    def construct_mapping(self, node, deep=False):  # noqa: ANN001 - PyYAML's signature
        lines: dict[object, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                repeated = key in lines
            except TypeError:  # an unhashable key: the constructor below reports it
                continue
            if repeated:
                raise FrontmatterError(
                    f"the field {key!r} is given twice (frontmatter lines {lines[key] + 1} "
                    f"and {key_node.start_mark.line + 1}): say each field once")
            lines[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


_Loader.add_constructor("tag:yaml.org,2002:timestamp",
                        lambda loader, node: loader.construct_scalar(node))
_OPEN = (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken, yaml.BlockSequenceStartToken,
         yaml.BlockMappingStartToken)
_CLOSE = (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken, yaml.BlockEndToken)


class FrontmatterError(ValueError):
    """Frontmatter that cannot be read: malformed, or too costly to read safely."""


def load_frontmatter(raw: str) -> object:
    """The YAML value of a frontmatter block, bounded in what it may cost.

    Memory frontmatter is a flat mapping of short fields, so anchors and aliases (which let
    a few hundred bytes expand to gigabytes), deep nesting (which exhausts the parser's
    recursion) and very long blocks are refused before anything is built.
    """
    if len(raw) > MAX_FRONTMATTER_CHARS:
        raise FrontmatterError(f"the frontmatter is {len(raw)} characters long; at most "
                               f"{MAX_FRONTMATTER_CHARS} are read")
    try:
        depth = 0
        for token in yaml.scan(raw, Loader=_Loader):
            if isinstance(token, (yaml.AliasToken, yaml.AnchorToken)):
                raise FrontmatterError("YAML anchors and aliases (& and *) are not allowed in "
                                       "frontmatter")
            if isinstance(token, _OPEN):
                depth += 1
                if depth > MAX_NESTING:
                    raise FrontmatterError(f"the frontmatter nests deeper than {MAX_NESTING} "
                                           "levels")
            elif isinstance(token, _CLOSE):
                depth -= 1
        return yaml.load(raw, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (frontmatter line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FrontmatterError(f"malformed YAML{where}: {problem}") from None
    except (ValueError, OverflowError, RecursionError, MemoryError) as exc:
        if isinstance(exc, FrontmatterError):
            raise
        raise FrontmatterError(f"the frontmatter cannot be read: {type(exc).__name__}") from None


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Return (frontmatter YAML text or None, body)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    m = _FRONTMATTER.match(text)
    if not m:
        return None, text
    return m.group(1), text[m.end():]


def extract_title(body: str) -> str | None:
    m = _TITLE.search(body)
    return m.group(1).strip() if m else None


def parse_memory(text: str, path: str) -> tuple[Memory | None, list[Problem]]:
    """Parse ``text`` (the file at ``path``, relative to .dmm/memory/).

    Returns the Memory (None when the file cannot be used at all) and every problem found.
    """
    raw, body = split_frontmatter(text)
    if raw is None:
        return None, [Problem(path, "no YAML frontmatter: the file must start with a '---' line "
                                    "and the frontmatter must end with another '---' line")]
    try:
        meta = load_frontmatter(raw)
    except FrontmatterError as exc:
        return None, [Problem(path, str(exc))]
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return None, [Problem(path, "frontmatter must be a mapping of field: value")]

    try:
        values, problems = validate_fields(meta, path)
    except (ValueError, OverflowError, RecursionError) as exc:  # a rule met a value it missed
        return None, [Problem(path, f"a frontmatter value cannot be read: {exc}")]
    title = extract_title(body)
    if title is None:
        problems.append(Problem(path, "no '# ' title heading in the body", "title", "warning"))
    if not body.strip():
        problems.append(Problem(path, "the body is empty", "body", "warning"))
    if any(p.severity == "error" for p in problems):
        return None, problems
    stem = path.rsplit("/", 1)[-1].removesuffix(".md")
    body = body.strip("\n")
    memory = Memory(title=title or stem.replace("_", " "), path=path, body=body,
                    tokens=count_tokens(body), **values)
    return memory, problems


_ID_LINE = re.compile(r"^id:[ \t]*['\"]?([^\s'\"]+)", re.M)


def frontmatter_ids(data: bytes) -> set[str]:
    """The id(s) a memory file's frontmatter gives, read from its first 4 KiB without parsing
    YAML: cheap enough to ask of every blob a search names."""
    head = data[:4096].decode("utf-8", "replace")
    return set(_ID_LINE.findall(head.split("\n---", 1)[0]))


def memory_id(data: bytes, path: str) -> str | None:
    """The id of the memory file ``data`` (at ``path``, relative to .dmm/memory/) as its YAML
    says, as the index and every reader take it; None when it does not parse. What decides
    which memory a change retires or resolves: ``frontmatter_ids`` finds every `id:` line, and
    a frontmatter that repeats the key names two ids of which YAML keeps only the last."""
    memory, _ = parse_memory(data.decode("utf-8", "replace"), path)
    return memory.id if memory is not None else None
