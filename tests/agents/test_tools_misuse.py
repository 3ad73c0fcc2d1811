"""Tools an agent cannot misuse (issue 28, section 4): the schemas say what is accepted and
the server holds to them; ids or paths wherever a memory is named, and an unknown one is an
error; patches placed by their context; an agent's own proposals listed, revised and
withdrawn, never another's; dmm's own error for an unknown memory resource."""

from __future__ import annotations

import json

from tests.agents.test_mcp import DRAFT, session
from tests.conflicts.test_resolution import NEW_LIMIT, OLD_LIMIT

def patch_two_lines_off(store, rel: str) -> str:
    """A diff changing the ceiling sentence, its header two lines off the real place."""
    lines = (store.memory / rel).read_text().splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith("The ceiling is"))
    old = lines[at]
    return (f"--- a/{rel}\n+++ b/{rel}\n@@ -{at + 3},2 +{at + 3},2 @@\n \n-{old}\n"
            f"+{old.replace('50,000,000', '100,000,000').replace('8 MB', '100 MB')}\n")


def text(result) -> str:
    return result.content[0].text


def test_every_tool_says_what_it_accepts(store):
    from dmm.agents import mcp_tools
    from dmm.conflicts.model import TYPES as CONFLICT_TYPES
    from dmm.memory.model import SCOPES, STATUSES
    from dmm.memory.select import SORTS
    from dmm.proposals.model import TYPES

    assert (mcp_tools.SCOPES, mcp_tools.STATUSES, mcp_tools.SORTS) == (SCOPES, STATUSES, SORTS)
    assert (mcp_tools.PROPOSAL_TYPES, mcp_tools.CONFLICT_TYPES) == (TYPES, CONFLICT_TYPES)
    from dmm.proposals import relations

    assert (mcp_tools.RELATIONS, mcp_tools.MAX_RELATIONS, mcp_tools.MAX_NOTE_CHARS) == (
        relations.RELATIONS, relations.MAX_RELATIONS, relations.MAX_NOTE_CHARS)

    async def calls(client):
        return (await client.list_tools()).tools

    for tool in session(store, calls):
        a = tool.annotations
        assert None not in (a.read_only_hint, a.destructive_hint, a.idempotent_hint,
                            a.open_world_hint), tool.name
        assert a.destructive_hint is False and a.open_world_hint is False
        assert tool.output_schema["type"] == "object"
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description") or prop.get("enum") or name in (
                "tag", "reverse", "scope", "status", "sort"), (tool.name, name)
    by_name = {t.name: t for t in session(store, calls)}
    assert by_name["conflict_flag"].input_schema["properties"]["memories"]["maxItems"] == 2
    assert by_name["memory_query"].input_schema["properties"]["budget"]["maximum"] > 0
    # type defaults to create, as `dmm write propose --type` does
    assert set(by_name["memory_propose"].input_schema["required"]) == {"path", "reason"}


def test_wrong_arguments_are_errors_that_name_the_argument(store):
    async def calls(client):
        return [await client.call_tool(name, args) for name, args in (
            ("memory_list", {"scope": "projects"}),
            ("memory_list", {"status": "retired"}),
            ("memory_list", {"limit": 5000}),
            ("memory_query", {"task": "x", "budget": 10**9}),
            ("conflicts_check", {"memories": ["mem_2099_01_01_001"]}),
            ("conflicts_check", {"memories": ["project/nope.md", OLD_LIMIT]}),
            ("conflict_flag", {"memories": [OLD_LIMIT], "description": "x"}),
            ("memory_propose", {"type": "rewrite", "path": "project/x.md", "reason": "r"}),
        )]

    results = session(store, calls)
    assert all(r.is_error for r in results), [text(r) for r in results]
    said = [text(r) for r in results]
    assert "scope" in said[0] and "one of" in said[0]
    assert "status" in said[1] and "one of" in said[1]
    assert "limit" in said[2] and "at most" in said[2]
    assert "budget" in said[3]
    assert "no memory with id or path" in said[4]
    assert "project/nope.md" in said[5]
    assert "memories" in said[6] and "at least 2" in said[6]
    assert "type" in said[7] and "one of" in said[7]


def test_conflicts_check_takes_paths_as_well_as_ids(store):
    assert store.dmm("conflicts", "scan").returncode == 0

    async def calls(client):
        by_path = await client.call_tool("conflicts_check", {"memories": [
            "project/limit_old.md"]})
        by_id = await client.call_tool("conflicts_check", {"memories": [NEW_LIMIT]})
        return by_path, by_id

    by_path, by_id = session(store, calls)
    assert by_path.structured_content["has_conflicts"], text(by_path)
    assert by_path.structured_content["checked"] == [OLD_LIMIT]
    assert by_id.structured_content["has_conflicts"]


def test_a_patch_whose_line_numbers_are_off_applies_by_its_context(store):
    async def calls(client):
        shifted = await client.call_tool("memory_propose", {
            "type": "update", "path": "project/limit_new.md", "reason": "raised",
            "patch": patch_two_lines_off(store, "project/limit_new.md")})
        stale = await client.call_tool("memory_propose", {
            "type": "update", "path": "project/limit_old.md", "reason": "x",
            "patch": patch_two_lines_off(store, "project/limit_new.md").replace(
                "limit_new", "limit_old")})
        return shifted, stale

    shifted, stale = session(store, calls)
    made = shifted.structured_content
    assert made["success"], made
    refused = stale.structured_content
    assert not refused["success"]
    assert any("does not apply" in e and "50,000,000" in e for e in refused["precheck_errors"])


def test_an_agent_lists_revises_and_withdraws_its_own_proposals_only(store):
    persons = store.dmm("write", "propose", "--path", "project/person.md", "--reason", "mine",
                        "--json", "--proposed-by", "alice", input=DRAFT)
    person_id = json.loads(persons.stdout)["proposal_id"]

    async def calls(client):
        out = {}
        out["made"] = await client.call_tool("memory_propose", {
            "type": "create", "path": "project/gateway.md", "reason": "first try",
            "content": DRAFT})
        out["again"] = await client.call_tool("memory_propose", {
            "type": "create", "path": "project/gateway.md", "reason": "second",
            "content": DRAFT})
        out["mine"] = await client.call_tool("proposal_list", {})
        first = out["made"].structured_content["proposal_id"]
        out["revised"] = await client.call_tool("proposal_revise", {
            "proposal_id": first, "reason": "a clearer title",
            "content": DRAFT.replace("# Upload size ceiling", "# The upload size ceiling")})
        out["old"] = await client.call_tool("proposal_status", {"proposal_id": first})
        out["theirs"] = await client.call_tool("proposal_withdraw", {
            "proposal_id": person_id, "reason": "not needed"})
        new = out["revised"].structured_content["proposal_id"]
        out["withdrawn"] = await client.call_tool("proposal_withdraw", {
            "proposal_id": new, "reason": "the team has one already"})
        out["left"] = await client.call_tool("proposal_list", {})
        return out

    out = session(store, calls)
    assert not out["again"].structured_content["success"]  # one open proposal per file
    assert "withdraw" in " ".join(out["again"].structured_content["precheck_errors"])
    mine = out["mine"].structured_content
    assert [p["path"] for p in mine["proposals"]] == ["project/gateway.md"]
    assert mine["proposed_by"].startswith("agent")
    revised = out["revised"].structured_content
    assert revised["success"] and revised["replaces"]
    assert out["old"].structured_content["status"] == "withdrawn"
    assert out["theirs"].is_error and "only its author" in text(out["theirs"])
    assert out["withdrawn"].structured_content["decision"] == "withdrawn"
    assert out["left"].structured_content["proposals"] == []
    assert store.dmm("review", "show", person_id).returncode == 0  # alice's is untouched


def test_an_unknown_memory_resource_keeps_dmms_message(store):
    async def calls(client):
        try:
            await client.read_resource("dmm://memory/mem_2099_01_01_001")
        except Exception as exc:  # noqa: BLE001 - the SDK raises the server's error
            return str(exc)
        return "no error"

    said = session(store, calls)
    assert "no memory with id or path" in said and "dmm list" in said


def test_an_update_keeps_the_memorys_identity_when_the_content_leaves_it_out(store):
    from tests.conftest import git

    new = ("---\ntags: [uploads, limits]\npriority: 0.6\nconfidence: active\n---\n\n# Upload "
           "size ceiling of the gateway\n\nThe ceiling is 100,000,000 bytes since the storage "
           "move. Uploads above it are refused with status 413. Why: the new bucket allows it.\n")

    async def calls(client):
        return await client.call_tool("memory_propose", {
            "type": "update", "path": "project/limit_new.md", "reason": "raised",
            "content": new})

    made = session(store, calls).structured_content
    assert made["success"], made
    text = git(store.root, "show", f"dmm/proposals/{made['proposal_id']}:"
                                   ".dmm/memory/project/limit_new.md")
    assert f"id: {NEW_LIMIT}" in text and "scope: project" in text and "100,000,000" in text
