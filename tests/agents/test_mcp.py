"""`dmm mcp`: the real server started as a subprocess, spoken to with the MCP SDK's own stdio
client, in a real repository."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from tests.conflicts.test_resolution import NEW_LIMIT, OLD_LIMIT
from tests.conftest import git

pytest.importorskip("mcp")

TOOLS = {"memory_query", "memory_show", "memory_list", "memory_propose", "proposal_status",
         "proposal_list", "proposal_revise", "proposal_withdraw", "conflicts_check",
         "conflicts_check_content", "conflict_flag"}
DRAFT = ("---\ntags: [uploads, limits]\npriority: 0.5\nconfidence: active\n---\n\n"
         "# Upload size ceiling of the public gateway\n\nThe ceiling is 2 GB. Uploads through "
         "the public gateway are refused above the size ceiling, answered with status 413.\n")


def session(repo, calls):
    """Start `dmm mcp` in ``repo`` and run ``calls(client)`` against it."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def main():
        # the tests' environment (the semantic layer off: tests/semantic/ test it, and the
        # background process a server asks would outlive the test)
        params = StdioServerParameters(command=sys.executable, args=["-m", "dmm", "mcp"],
                                       cwd=str(repo.root), env=dict(os.environ))
        async with Client(params) as client:
            return await calls(client)

    return asyncio.run(main())


def data(result) -> dict:
    """A tool's data: its structuredContent (memory_query's text is markdown for the model;
    every other tool's text is the same data as JSON)."""
    assert not result.is_error, result.content[0].text
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def test_the_tools_are_the_agent_ones_and_none_decides(store):
    async def calls(client):
        return {t.name: t for t in (await client.list_tools()).tools}

    tools = session(store, calls)
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        # withdrawing one's own proposal decides nothing about memory; the rest are decisions
        assert not any(word in name for word in ("approve", "reject", "resolve", "dismiss",
                                                 "defer")), name
        assert tool.description and tool.input_schema["type"] == "object"


def test_every_tool_does_its_job_on_a_real_repository(store):
    async def calls(client):
        out = {}
        out["query"] = data(await client.call_tool(
            "memory_query", {"task": "upload size ceiling of the gateway", "budget": 800}))
        out["show_id"] = data(await client.call_tool("memory_show", {"memory": OLD_LIMIT}))
        out["show_path"] = data(await client.call_tool(
            "memory_show", {"memory": ".dmm/memory/project/limit_new.md"}))
        out["list"] = data(await client.call_tool("memory_list", {"tag": "uploads"}))
        out["list_prefix"] = data(await client.call_tool("memory_list",
                                                         {"path_prefix": "project/jobs/"}))
        out["list_sorted"] = data(await client.call_tool("memory_list", {
            "sort": "created", "reverse": True, "limit": 2}))
        out["check"] = data(await client.call_tool("conflicts_check",
                                                   {"memories": [OLD_LIMIT]}))
        out["draft"] = data(await client.call_tool("conflicts_check_content",
                                                   {"content": DRAFT}))
        out["propose"] = data(await client.call_tool("memory_propose", {
            "type": "create", "path": "project/gateway_ceiling.md", "reason": "agent learned it",
            "content": DRAFT}))
        out["status"] = data(await client.call_tool(
            "proposal_status", {"proposal_id": out["propose"]["proposal_id"]}))
        out["promote"] = data(await client.call_tool("memory_propose", {
            "type": "promote", "path": "project/limit_old.md", "new_scope": "global",
            "reason": "true for every service", "expires": "2031-01-31"}))
        out["flag"] = data(await client.call_tool("conflict_flag", {
            "memories": ["mem_2025_02_01_001", "mem_2025_05_06_001"],
            "description": "the job queue note and the node note disagree on the runtime"}))
        boot = await client.read_resource("dmm://boot")
        memory = await client.read_resource(f"dmm://memory/{NEW_LIMIT}")
        out["boot"] = boot.contents[0].text
        out["memory"] = memory.contents[0].text
        return out

    assert store.dmm("conflicts", "scan").returncode == 0  # the pack warns from the last scan
    out = session(store, calls)
    packed = {e["memory_id"] for e in out["query"]["retrieved"]}
    assert {OLD_LIMIT, NEW_LIMIT} <= packed and out["query"]["conflicts"]
    assert out["show_id"]["path"] == "project/limit_old.md" and "8 MB" in out["show_id"]["content"]
    assert out["show_path"]["memory_id"] == NEW_LIMIT
    assert {m["memory_id"] for m in out["list"]["memories"]} == {OLD_LIMIT, NEW_LIMIT}
    assert [m["path"] for m in out["list_prefix"]["memories"]] == [
        "project/jobs/beanstalk.md", "project/jobs/sqs.md"]
    newest = [m["created"] for m in out["list_sorted"]["memories"]]
    assert newest == sorted(newest, reverse=True) and len(newest) == 2
    assert out["check"]["has_conflicts"]
    assert {m["memory_id"] for c in out["draft"]["potential_conflicts"] for m in c["memories"]} & {
        OLD_LIMIT, NEW_LIMIT}
    assert out["draft"]["similar_memories"]
    # a write through MCP is a real proposal branch with a real commit
    proposal = out["propose"]
    assert proposal["success"] and "conflicts" in proposal["reviewer_checks"]
    branch = f"dmm/proposals/{proposal['proposal_id']}"
    assert git(store.root, "rev-parse", "--verify", branch).strip() == proposal["commit"]
    assert "Dmm-Proposed-By: agent" in git(store.root, "log", "-1", "--format=%B", branch)
    assert out["status"]["open"] and out["status"]["status"] == "pending"
    promoted = out["promote"]  # an agent can say what becomes of an expiry date too
    assert promoted["success"], promoted
    assert "expires: 2031-01-31" in git(store.root, "show", f"dmm/proposals/"
                                        f"{promoted['proposal_id']}:.dmm/memory/global/limit_old.md")
    assert not (store.memory / "project" / "gateway_ceiling.md").exists()  # nothing landed
    record = store.root / ".dmm" / "conflicts" / f"{out['flag']['conflict_id']}.json"
    assert json.loads(record.read_text())["status"] == "flagged"
    assert git(store.root, "log", "-1", "--format=%s").startswith("dmm: flag conflict")
    assert "dmm" in out["boot"] and "The ceiling is 50,000,000 bytes" in out["memory"]
    assert git(store.root, "status", "--porcelain") == ""


def test_errors_carry_the_cli_message_and_never_stop_the_server(store):
    async def calls(client):
        results = [
            await client.call_tool("memory_show", {"memory": "mem_2099_01_01_001"}),
            await client.call_tool("memory_query", {"task": "x", "budget": "lots"}),
            await client.call_tool("memory_query", {"task": "   "}),
            await client.call_tool("proposal_status", {"proposal_id": "../../HEAD"}),
            await client.call_tool("memory_propose", {"type": "create", "path": "../x.md",
                                                      "reason": "r", "content": DRAFT}),
            await client.call_tool("memory_list", {"limit": 0}),
            await client.call_tool("conflicts_check_content", {"content": "---\na: &x [1]\n"
                                                               "b: *x\n---\n# T\n"}),
        ]
        alive = await client.call_tool("memory_show", {"memory": OLD_LIMIT})
        return results, alive

    results, alive = session(store, calls)
    texts = [r.content[0].text for r in results]
    assert all(r.is_error for r in results[:4] + results[5:]), texts
    assert "no memory with id or path" in texts[0] and "dmm list" in texts[0]
    assert "the task is empty" in texts[2]
    assert "proposal_id" in texts[3] and "proposal id" in texts[3]
    assert not data(results[4])["success"]  # a refused proposal is an answer, like the CLI's
    assert "'..' part" in " ".join(data(results[4])["precheck_errors"])
    assert "draft cannot be read" in texts[6] and "internal error" not in texts[6]
    assert data(alive)["memory_id"] == OLD_LIMIT


def server_libraries_imported(argv: list[str], cwd, stdin: str = "") -> list[str]:
    """Which server libraries a dmm command line imported, run in a fresh interpreter."""
    code = (f"import sys\nfrom dmm.cli import main\nsys.argv = {['dmm', *argv]!r}\ntry:\n"
            "    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('mcp', 'starlette', 'uvicorn', 'pydantic') "
            "if m in sys.modules), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True,
                          text=True, input=stdin)
    return json.loads(proc.stderr.strip().splitlines()[-1].replace("'", '"'))


def test_the_query_path_never_imports_the_server_libraries(store):
    assert server_libraries_imported(["query", "gateway", "--json"], store.root) == []
