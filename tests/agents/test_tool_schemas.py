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
