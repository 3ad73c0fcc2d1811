"""The SQLite cache in the git folder (<git-dir>/dmm/): schema, connection and freshness. Only a
cache: deleting it loses nothing, every command rebuilds what it needs from the working tree."""
