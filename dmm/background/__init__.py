"""The repository's background process (``daemon.py``: one per clone, it keeps the model,
the semantic index and the words' postings loaded and answers queries, hooks, MCP and HTTP)
and the one boundary for reaching it (``client.py``, standard library only, so that the index
can ask it whether the cache is fresh without importing anything above itself)."""
