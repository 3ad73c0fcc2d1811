"""The pack an agent receives is right-sized (issue 28, section 3): the prompt named in one
short line, the limit counted in UTF-16 units as Claude Code counts it, the baseline once per
session, facts rather than orders, and compact MCP answers with the excluded list summarised."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.agents.test_mcp import session
from tests.conftest import git, memory_text

TRACEBACK = "\n".join(f'  File "/srv/app/module_{n}.py", line {n}, in handler_{n}\n'
                      f"    result = compute(payload[{n}])" for n in range(200))


def hook(repo, event: str, payload: dict) -> str:
    proc = subprocess.run([sys.executable, "-m", "dmm", "agent", "hook", event], cwd=repo.root,
                          input=json.dumps(payload), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_long_prompt_is_named_in_one_line_and_leaves_the_room_to_memories(store):
    prompt = ("What is the upload size ceiling of the public gateway? It fails with this:\n"
              + TRACEBACK)
    assert len(prompt) > 9000
    out = hook(store, "user-prompt-submit", {"prompt": prompt})
    assert "Upload size ceiling" in out
    assert "module_150" not in out  # none of the pasted traceback comes back
    first = out.splitlines()[0]
    assert "upload size ceiling of the public gateway" in first and len(first) < 400


def test_the_limit_is_counted_in_utf16_units(store):
    from dmm.agents.hook import fit, utf16_length

    body = "Uploads are refused above the ceiling 🚫. " * 60
    store.add("project/emoji.md", "mem_2026_11_02_001", "Upload ceiling with emoji", body,
              tags="[uploads]")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "emoji")
    config = store.root / ".dmm" / "config.toml"
    config.write_text(config.read_text().replace("hook_max_chars = 9500",
                                                 "hook_max_chars = 1000"))
    out = hook(store, "user-prompt-submit", {"prompt": "upload ceiling with emoji"})
    assert utf16_length(out) <= 1000 and "cut to fit" in out
    assert len(out) < utf16_length(out)  # the emoji count twice
    assert utf16_length(fit("🚫" * 600, 1000)) <= 1000


def test_the_baseline_comes_once_per_session(store):
    store.add("baseline/identity.md", "mem_2026_11_02_002", "This is the billing service",
              "The repository holds the billing service of the shop; it owns invoices.",
              scope="baseline", tags="[identity]")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "baseline")
    start = hook(store, "session-start", {"source": "startup"})
    assert "billing service" in start and "baseline memories" in start
    assert hook(store, "session-start", {"source": "resume"}) == ""
    assert "billing service" in hook(store, "session-start", {"source": "compact"})
    prompt = hook(store, "user-prompt-submit", {"prompt": "upload size ceiling of the gateway"})
    assert "Upload size ceiling" in prompt and "billing service" not in prompt
    # a subagent's turn is not a person's prompt
    assert hook(store, "user-prompt-submit", {"prompt": "upload size ceiling",
                                              "agent_id": "a1", "agent_type": "explore"}) == ""


def test_the_pack_states_facts_not_orders(store):
    assert store.dmm("conflicts", "scan").returncode == 0
    out = hook(store, "user-prompt-submit", {"prompt": "upload size ceiling of the gateway"})
    assert "Known conflict" in out and "disagree" in out
    for order in ("Check them", "you must", "You must", "follow", "Follow", "run `dmm"):
        assert order not in out, order


def test_mcp_answers_are_compact_and_summarise_the_excluded(store):
    for n in range(40):
        store.add(f"project/uploads/rule_{n:02d}.md", f"mem_2026_11_03_{n:03d}",
                  f"Upload rule {n} of the gateway",
                  f"Upload rule {n}: the gateway refuses uploads of kind {n} above the "
                  "ceiling, answered with status 413 and a problem document.", tags="[uploads]")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "many")

    async def calls(client):
        pack = await client.call_tool("memory_query", {"task": "upload ceiling of the gateway",
                                                       "budget": 300})
        listed = await client.call_tool("memory_list", {})
        following = await client.call_tool("memory_list", {
            "cursor": listed.structured_content["next_cursor"]})
        return pack, listed, following

    pack, listed, following = session(store, calls)
    text = pack.content[0].text
    assert "\n" not in text.strip() and ": " not in text[:200]  # compact JSON
    assert pack.structured_content == json.loads(text)
    excluded = pack.structured_content["excluded"]
    assert excluded["count"] > 5 and len(excluded["first"]) == 5
    assert len(text) < 6000
    assert len(listed.structured_content["memories"]) == 20
    assert listed.structured_content["total"] == 46
    page2 = following.structured_content["memories"]
    assert page2 and page2[0]["path"] > listed.structured_content["memories"][-1]["path"]
