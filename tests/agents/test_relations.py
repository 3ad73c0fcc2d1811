"""Declaring relations at write time through the agents' doors: the real `dmm mcp` spoken to
with the MCP SDK's client, and the real `dmm serve` over HTTP, in a real repository."""

from __future__ import annotations

import json

import pytest

from tests.agents.server import Server
from tests.agents.test_mcp import DRAFT, data, session
from tests.conflicts.test_resolution import NEW_LIMIT, OLD_LIMIT, SQS
from tests.conftest import git

pytest.importorskip("mcp")


def test_an_agent_checks_a_draft_then_declares_and_revises_in_two_calls(store):
    async def calls(client):
        out = {}
        out["check"] = data(await client.call_tool("conflicts_check_content",
                                                   {"content": DRAFT}))
        out["bare"] = data(await client.call_tool("memory_propose", {
            "type": "create", "path": "project/ceiling.md", "reason": "learned it",
            "content": DRAFT}))
        out["revised"] = data(await client.call_tool("proposal_revise", {
            "proposal_id": out["bare"]["proposal_id"], "reason": "declared",
            "relations": [{"memory_id": OLD_LIMIT, "relation": "supersedes",
                           "note": "the ceiling was raised"},
                          {"memory_id": NEW_LIMIT, "relation": "contradicts"}]}))
        out["unknown"] = data(await client.call_tool("memory_propose", {
            "type": "create", "path": "project/other.md", "reason": "r", "content": DRAFT,
            "relations": [{"memory_id": "mem_2020_01_01_gone", "relation": "refines"}]}))
        out["bad"] = await client.call_tool("memory_propose", {
            "type": "create", "path": "project/other.md", "reason": "r", "content": DRAFT,
            "relations": [{"memory_id": OLD_LIMIT, "relation": "overrides"}]})
        out["long"] = await client.call_tool("memory_propose", {
            "type": "create", "path": "project/other.md", "reason": "r", "content": DRAFT,
            "relations": [{"memory_id": OLD_LIMIT, "relation": "refines", "note": "n" * 501}]})
        tools = {t.name: t for t in (await client.list_tools()).tools}
        return out, tools

    out, tools = session(store, calls)
    assert {n["memory_id"] for n in out["check"]["neighbours"]} >= {OLD_LIMIT, NEW_LIMIT}
    bare = out["bare"]
    assert bare["success"] and bare["relations"] == []
    assert OLD_LIMIT in bare["declare"] and bare["neighbours"][0]["passage"]
    revised = out["revised"]
    assert revised["success"] and revised["replaces"] == bare["proposal_id"]
    assert {r["relation"] for r in revised["relations"]} == {"supersedes", "contradicts"}
    assert revised["declare"] is None  # both neighbours declared
    branch = f"dmm/proposals/{revised['proposal_id']}"
    text = git(store.root, "show", f"{branch}:.dmm/memory/project/ceiling.md")
    assert f"supersedes: [{OLD_LIMIT}]" in text and "The ceiling is 2 GB" in text
    assert "status: deprecated" in git(store.root, "show",
                                       f"{branch}:.dmm/memory/deprecated/project/limit_old.md")
    assert not out["unknown"]["success"]
    assert any("no memory of this store" in e for e in out["unknown"]["precheck_errors"])
    assert out["bad"].is_error and "must be one of supersedes" in out["bad"].content[0].text
    assert out["long"].is_error and "at most 500 characters" in out["long"].content[0].text
    described = tools["memory_propose"].description
    assert "relations" in described and "neighbours" in described
    assert "relations" in tools["memory_propose"].input_schema["properties"]


def test_http_proposals_take_relations_and_refuse_bad_ones(store):
    with Server(store.root) as server:
        status, made = server.post("/write/propose", {
            "type": "create", "path": "project/ceiling.md", "reason": "learned it",
            "content": DRAFT, "relations": [
                {"memory_id": OLD_LIMIT, "relation": "contradicts", "note": "raised"},
                {"memory_id": SQS, "relation": "unrelated"}]})
        assert status == 201 and made["success"], made
        assert made["relations"][0] == {"memory_id": OLD_LIMIT, "relation": "contradicts",
                                        "note": "raised"}
        near = {n["memory_id"]: n["declared"] for n in made["neighbours"]}
        assert near[OLD_LIMIT] == "contradicts" and NEW_LIMIT in near
        body = git(store.root, "log", "-1", "--format=%B",
                   f"dmm/proposals/{made['proposal_id']}")
        assert f"Dmm-Relation: {OLD_LIMIT} contradicts raised" in body
        status, listed = server.get("/write/proposals?status=pending")
        assert listed["proposals"][0]["relations"][1]["memory_id"] == SQS

        status, itself = server.post("/write/propose", {
            "type": "update", "path": "project/limit_new.md", "reason": "r",
            "content": DRAFT, "relations": [{"memory_id": NEW_LIMIT, "relation": "refines"}]})
        assert status == 422 and not itself["success"]
        assert any("the proposed memory itself" in e for e in itself["precheck_errors"])
        status, wrong = server.post("/write/propose", {
            "type": "create", "path": "project/other.md", "reason": "r", "content": DRAFT,
            "relations": [{"memory_id": OLD_LIMIT, "relation": "replaces"}]})
        assert status in (400, 422) and "error" in wrong
        assert json.dumps(wrong).count("Traceback") == 0
