"""The memory model: what a memory file is and when it is valid. Pure: no IO anywhere here.

Parsing (parse.py) imports PyYAML, so it is imported where files are read, not here: commands
that only read the cache never pay for it.
"""

from dmm.memory.model import Memory, Problem

__all__ = ["Memory", "Problem"]
