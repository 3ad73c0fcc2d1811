"""Retrieval: rank memories for a task (rank.py) and pack them into a token budget (pack.py)."""
