"""Regenerate docs/cli.md from the commands' --help texts (tests/test_docs.py checks it is current).

    python tools/gen_cli_docs.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def render() -> str:
    from click.testing import CliRunner

    from dmm.cli import COMMANDS, cli

    runner = CliRunner()
    parts = ["# CLI reference\n",
             "Generated from `--help` by `tools/gen_cli_docs.py`; do not edit by hand.\n",
             "## dmm\n", "```", runner.invoke(cli, ["--help"], prog_name="dmm", terminal_width=100).output.rstrip(),
             "```\n"]
    for name in COMMANDS:
        out = runner.invoke(cli, [name, "--help"], prog_name="dmm", terminal_width=100).output.rstrip()
        parts += [f"## dmm {name}\n", "```", out, "```\n"]
    return "\n".join(parts)


if __name__ == "__main__":
    (ROOT / "docs" / "cli.md").write_text(render(), encoding="utf-8")
