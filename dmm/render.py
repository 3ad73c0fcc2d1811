"""The one place that turns results into text: jinja2 templates for people, JSON for programs.

jinja2 is imported on first use so that `--json` output never pays for it.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from functools import lru_cache
from typing import Any

from dmm.resources import resource_dir

_SURROGATE = re.compile("[\ud800-\udfff]")


@lru_cache(maxsize=1)
def _environment():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined, autoescape=False)
    # No bytecode cache: jinja2's default one lives in a shared temp folder, where a planted
    # symbolic link redirects it (and it chmods what it finds); compiling the few small
    # templates a command uses costs a few milliseconds.
    return env


def render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)


def to_json(data: Any) -> str:
    """``data`` as JSON text. A lone surrogate (a byte of a git name that was not UTF-8, see
    dmm.gitrepo.run) is written as its \\uXXXX escape, which JSON reads back as the same
    string: the text stays encodable as UTF-8 for a socket or a file."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=_default) + "\n"
    try:
        text.encode("utf-8")  # C speed; a regex search costs ~20 ms on a 10,000-row answer
    except UnicodeEncodeError:
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def _default(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun in the number it needs: "1 day", "3 days", "1 memory", "2 memories"
    (``plural``: when adding an s is not it; "memory" and "-y" nouns know theirs)."""
    if n == 1:
        return f"{n} {noun}"
    if plural is None:
        plural = noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" \
            else noun + "s"
    return f"{n} {plural}"


def some(names: list[str], shown: int = 3) -> str:
    """The first ``shown`` of ``names`` and how many more: "a, b, c and 2 more"."""
    rest = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {rest} more" if rest > 0 else "")
