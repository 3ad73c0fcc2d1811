"""The SQLite cache under .dmm/index/: schema, connection and freshness. Only a cache: deleting
.dmm/index/ loses nothing, every command rebuilds what it needs from the working tree."""
