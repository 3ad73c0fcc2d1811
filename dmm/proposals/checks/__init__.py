"""The reviewer's automated checks, one module each, all behind one interface.

A check is a module with ``NAME`` and ``run(ctx) -> list[Issue]``; it may also define
``fix(text) -> text`` for the issues it marks auto-fixable, and ``wanted(workspace) -> bool``
when settings turn it on or off. ``all_checks`` lists them in the order they run;
the optional check by a language model (coherence) joined it without touching the others.
"""

from __future__ import annotations

from dmm.proposals.checks.base import Issue, ReviewContext

__all__ = ["Issue", "ReviewContext", "all_checks"]


def all_checks(workspace=None) -> list:
    """The checks in the order they run; a check with ``wanted(workspace)`` runs only when
    the store's settings and this clone turn it on (the coherence check: while the judge is
    on here); without a workspace (CI), never. Relations runs last: it reads the findings of
    the checks before it."""
    from dmm.proposals.checks import (baseline, coherence, conflicts, declared, duplicate,
                                      quality, relations, schema)

    checks = [declared, schema, quality, duplicate, conflicts, coherence, baseline, relations]
    return [c for c in checks if not hasattr(c, "wanted")
            or (workspace is not None and c.wanted(workspace))]
