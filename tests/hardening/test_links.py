"""Committed symbolic links at every level of .dmm/ (issue 26, items 1 and 2): what a repository
holds is untrusted, so a link committed in place of the store, .dmm itself, BOOT.md, the
config, the decision records, the cache folder or anything inside the store never makes dmm
read, show or write a file outside the repository, on any surface (CLI, agent hook, MCP,
HTTP), whether the link arrived in a commit, a fresh clone or a merged branch."""

from __future__ import annotations

import asyncio
import os
import json
import sys

import pytest

from tests.agents.server import Server
from tests.conflicts.test_resolution import NODE18
from tests.conftest import git, run_dmm
from tests.hardening.faults import (LINK_PLACES, SECRET, outside_store, plant_link,
                                    tree_digest)

# where a link makes dmm refuse the whole store (the rest are a problem of one file, or of the
# cache, and every other memory keeps working)
REFUSED = {".dmm", ".dmm/memory", ".dmm/conflicts", ".dmm/BOOT.md", ".dmm/config.toml"}
KEPT = "mem_2026_03_03_003"
TASK = "production database password of the frontend build"


def _commit_link(repo, place: str, outside, how: str):
    """The repository (or a fresh clone of it) with ``place`` a committed link, made ``how``:
    committed directly, in a fresh clone of such a repository, or merged from a branch that
    swapped the entry for a relative link."""
    root = repo.root
    if how == "merge":
        git(root, "checkout", "-qb", "swap")
    plant_link(root, place, outside, relative=how == "merge")
    git(root, "add", "-A", "--force")
    git(root, "commit", "-qm", f"swap {place}", "--no-verify")
    if how == "merge":
        git(root, "checkout", "-q", "main")
        git(root, "merge", "-q", "--no-ff", "--no-edit", "swap")
    if how == "clone":
        clone = root.parent / "clone"
        git(root.parent, "clone", "-q", str(root), str(clone))
        return clone
    return root


def _surfaces(root) -> dict[str, tuple[int, str]]:
    """What every reading command answers: (exit code, everything it printed)."""
    runs = {
        "query": run_dmm("query", TASK, cwd=root),
        "show": run_dmm("show", NODE18, cwd=root),
        "list": run_dmm("list", "--json", cwd=root),
        "validate": run_dmm("validate", cwd=root),
        "status": run_dmm("status", cwd=root),
        "conflicts": run_dmm("conflicts", "list", "--status", "all", "--json", cwd=root),
        "hook": run_dmm("agent", "hook", "user-prompt-submit", cwd=root,
                        input=json.dumps({"prompt": TASK})),
    }
    return {name: (p.returncode, p.stdout + p.stderr) for name, p in runs.items()}


@pytest.mark.parametrize("place", LINK_PLACES)
@pytest.mark.parametrize("how", ["commit", "clone", "merge"])
def test_a_committed_link_never_reads_or_writes_outside(store, tmp_path, place, how):
    store.add("global/kept.md", KEPT, "Commit messages say why", scope="global")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "one memory outside project/")
    outside = outside_store(tmp_path / "outside")
    before = tree_digest(tmp_path / "outside")
    root = _commit_link(store, place, outside, how)
    answers = _surfaces(root)
    for name, (code, text) in answers.items():
        assert SECRET not in text, (name, text)
        if place in REFUSED and name != "hook":
            assert code != 0 and "symbolic link" in text, (name, code, text)
    if place in REFUSED:
        assert "symbolic link" in answers["hook"][1]  # one line, the agent is not blocked
        assert answers["hook"][0] == 0
    elif place.startswith(".dmm/memory/"):  # a problem of that file or folder only
        assert answers["validate"][0] == 1 and "symbolic link" in answers["validate"][1]
        assert answers["list"][0] == 0 and KEPT in answers["list"][1]
    else:  # the decision records or the cache: read nothing through them, answer anyway
        assert answers["query"][0] == 0 and answers["list"][0] == 0
    init = run_dmm("init", cwd=root)
    assert SECRET not in init.stdout + init.stderr
    if place in REFUSED:  # (.dmm/index is not dmm's any more: init leaves it alone)
        assert init.returncode != 0 and "symbolic link" in init.stderr
    assert tree_digest(tmp_path / "outside") == before  # nothing written (or moved) outside


def _mcp(root, calls):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def main():
        params = StdioServerParameters(command=sys.executable, args=["-m", "dmm", "mcp"],
                                       cwd=str(root), env=dict(os.environ))
        async with Client(params) as client:
            return await calls(client)

    return asyncio.run(main())


@pytest.mark.parametrize("place", [".dmm/memory", ".dmm/BOOT.md",
                                   ".dmm/memory/project/node18.md"])
def test_mcp_never_discloses_what_a_link_points_to(store, tmp_path, place):
    """The server starts before the link arrives (a merge while it runs), so its per-call
    checks are what keep the boundary."""
    pytest.importorskip("mcp")
    outside = outside_store(tmp_path / "outside")

    async def calls(client):
        out = {"boot before": await client.read_resource("dmm://boot")}
        _commit_link(store, place, outside, "commit")
        out["query"] = await client.call_tool("memory_query", {"task": TASK})
        out["show"] = await client.call_tool("memory_show", {"memory": NODE18})
        for uri in ("dmm://boot", f"dmm://memory/{NODE18}"):
            try:
                out[uri] = await client.read_resource(uri)
            except Exception as exc:  # noqa: BLE001 - an MCP error is a fine answer
                out[uri] = f"error: {exc}"
        return out

    answers = _mcp(store.root, calls)
    assert "dmm" in str(answers["boot before"])  # BOOT.md was served while it was a file
    for name, answer in answers.items():
        assert SECRET not in str(answer), (name, answer)
    if place == ".dmm/memory":
        assert answers["query"].is_error and "symbolic link" in answers["query"].content[0].text


@pytest.mark.parametrize("place", [".dmm/memory", ".dmm"])
def test_http_never_discloses_what_a_link_points_to(store, tmp_path, place):
    outside = outside_store(tmp_path / "outside")
    with Server(store.root) as server:
        assert server.get(f"/memories/{NODE18}")[0] == 200
        _commit_link(store, place, outside, "commit")
        for path, body in ((f"/memories/{NODE18}", None), ("/query", {"query": TASK}),
                           ("/memories", None)):
            status, data = (server.get(path) if body is None else server.post(path, body))
            assert SECRET not in json.dumps(data), (path, data)
            assert status >= 400 and "symbolic link" in json.dumps(data), (path, status, data)
