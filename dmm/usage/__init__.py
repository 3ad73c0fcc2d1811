"""Usage tracking: which queries ran and which memories they returned (PRD phase 2, 4.2, 5.8).

This is local telemetry, not memory: it lives in usage.sqlite3 in the git folder
(<git-common-dir>/dmm/, shared by the clone's work trees), is never committed or pushed, and deleting it only forgets the statistics. It is kept apart from
the cache so that a cache rebuild does not erase it.
"""
