"""dmm: Dynamic Markdown Memory, a git-native memory store for AI coding agents."""

__version__ = "0.1.0"
