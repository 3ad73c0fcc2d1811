"""What a client that strips a schema's ranges still tells its model (issue 36, item 7): Codex
passes a tool's parameters without minimum, maximum, lengths and item counts, so every range is
said in the parameter's description too."""

from __future__ import annotations

from dmm.agents.mcp_tools import TOOLS

STRIPPED = ("minimum", "maximum", "maxLength", "minItems", "maxItems")


def _parts(schema: dict):
    yield schema
    if isinstance(schema.get("items"), dict):
        yield from _parts(schema["items"])


def test_every_range_is_said_in_the_parameter_description():
    checked = 0
    for tool in TOOLS:
        for name, schema in tool["inputSchema"]["properties"].items():
            for part in _parts(schema):
                words = part.get("description", "")
                for key in STRIPPED:
                    if key in part:
                        checked += 1
                        assert f"{part[key]:,}" in words, (tool["name"], name, key, words)
    assert checked > 20


def test_the_ranges_read_as_words():
    budget = next(t for t in TOOLS if t["name"] == "memory_query")["inputSchema"][
        "properties"]["budget"]
    assert budget["description"].endswith("From 100 to 20,000.")
    pair = next(t for t in TOOLS if t["name"] == "conflict_flag")["inputSchema"][
        "properties"]["memories"]
    assert "Exactly 2 items; no item twice." in pair["description"]


def test_docs_name_the_read_only_and_write_tools_as_the_tools_declare_them():
    """Issue 36, item 8: docs/agents.md called proposal_status and proposal_list write tools
    and said Codex asks before the write tools in `codex exec` (it does not, nor with
    approval_policy = "on-request"). The lists in its Codex row are the tools' own
    readOnlyHint, and the row says what Codex does; Claude Code's row says `claude -p` starts a
    server still pending approval, and how to trust Codex's hooks is said."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "agents.md").read_text()
    codex = next(line for line in text.splitlines() if line.startswith("| Codex |"))
    claude = next(line for line in text.splitlines() if line.startswith("| Claude Code |"))

    def named(after: str) -> set[str]:
        listed = codex.split(after, 1)[1].split(")", 1)[0]
        return set(re.findall(r"`(\w+)`", listed))

    read_only = {t["name"] for t in TOOLS if t["annotations"]["readOnlyHint"]}
    assert named("The read-only tools (") == read_only
    assert named("the write tools either (") == {t["name"] for t in TOOLS} - read_only
    assert {"proposal_status", "proposal_list"} <= read_only
    assert "`codex exec` does not ask before the write tools" in codex
    assert 'approval_policy = "on-request"' in codex
    assert "`/hooks` panel" in codex and "--dangerously-bypass-hook-trust" in codex
    assert "`claude -p` starts a server still pending approval" in claude
