"""memory/select.py: the selection and order behind `dmm list`, MCP memory_list and
GET /memories."""

from __future__ import annotations

import datetime as dt

from dmm.memory.model import Memory
from dmm.memory.select import Selection, select


def mem(mid: str, created: dt.date | None) -> Memory:
    return Memory(id=mid, path=f"project/{mid}.md", title=mid, body="", tags=[],
                  scope="project", priority=0.5, confidence="active", status="active",
                  created=created)


def test_a_memory_with_no_date_comes_last_in_either_order():
    memories = [mem("a", dt.date(2025, 1, 1)), mem("b", None), mem("c", dt.date(2026, 1, 1))]
    by = lambda reverse: [m.id for m in select(memories, Selection(sort="created",  # noqa: E731
                                                                   reverse=reverse))]
    assert by(False) == ["a", "c", "b"]
    assert by(True) == ["c", "a", "b"]  # newest first, the undated one still last
