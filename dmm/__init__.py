"""dmm: Dynamic Markdown Memory, a git-native memory store for AI coding agents."""

__version__ = "0.1.0"

# The name this package is installed under (pip, importlib.metadata); the command and the
# import package stay `dmm`. "dmm" on the package index is another author's project: anything
# that installs or inspects this distribution uses this name, never "dmm".
DISTRIBUTION = "dmm-memory"
