"""Retrieval: rank memories for a task (rank.py) and pack them into a token budget (pack.py)."""

MAX_BUDGET = 1_000_000  # tokens: far beyond any context window, and safe for SQLite integers
