"""Find the files dmm ships beside its code: jinja2 templates and git hook shims.

In a wheel they are packaged under dmm/_data/ (pyproject.toml force-includes the top-level
templates/ and hooks/ folders there); in a source checkout they are read from the top level.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """The folder ``templates`` or ``hooks``, wherever this installation keeps it."""
    for candidate in (_PKG / "_data" / name, _PKG.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"dmm installation is missing its {name}/ folder")
