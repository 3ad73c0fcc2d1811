"""Git hook shims: install, uninstall, status, and the entry point the shims call."""
