"""The memory model: what a memory file is and when it is valid. Pure: no IO anywhere here."""

from dmm.memory.model import Memory, Problem
from dmm.memory.parse import parse_memory

__all__ = ["Memory", "Problem", "parse_memory"]
