"""The stand-in judge's answers to dmm's other questions, told apart by the schema asked for:
the reviewer's coherence check (``relations``) and the narrative pass (``confusions``).

The same rule as the rule-extraction verdict (dmm_judge_standin.verdict): two fenced texts
clash when a sentence of each shares at least three content words with the other and one
negates while the other does not, or they state different numbers; the answer quotes both
sentences. Like a gullible model it obeys "ignore previous instructions" only when that text
stands outside every fence. The ``liar`` mode answers with a memory it was not shown and with
quotes that are in no memory, as an untrusted model may.
"""

from __future__ import annotations

import re

from dmm_judge_standin import FENCE, NEGATION, NUMBER, STEER, content, sentences

# the lines dmm writes (outside the fences) naming what each fence holds
NAMED = re.compile(r"^(?P<label>fact \d+|memory \d+): id (?P<id>\S+?),", re.M)
TITLE = re.compile(r"^# (.+)$", re.M)


def task_for(schema: dict | None):
    properties = (schema or {}).get("properties") or {}
    if "confusions" in properties:
        return narrative
    if "relations" in properties:
        return coherence
    return None


def clash(a: str, b: str) -> tuple[str, str, str] | None:
    """(sentence of a, sentence of b, "negation" or "number") when they clash."""
    for s1 in sentences(a):
        for s2 in sentences(b):
            if len(content(s1) & content(s2)) < 3:
                continue
            if bool(NEGATION.search(s1)) != bool(NEGATION.search(s2)):
                return s1, s2, "negation"
            n1, n2 = set(NUMBER.findall(s1)), set(NUMBER.findall(s2))
            if n1 and n2 and n1 != n2:
                return s1, s2, "number"
    return None


def _fenced(prompt: str) -> tuple[dict[str, str], str]:
    """{label: fenced text} and the prompt outside every fence."""
    bodies = {m.group("label"): m.group("body") for m in FENCE.finditer(prompt)}
    return bodies, FENCE.sub("", prompt)


def narrative(mode: str, system: str, prompt: str) -> dict:
    bodies, outside = _fenced(prompt)
    if STEER.search(outside + "\n" + system):
        return {"confusions": []}
    facts = [(m.group("id"), bodies.get(m.group("label"), ""))
             for m in NAMED.finditer(outside) if m.group("label").startswith("fact")]
    found = []
    for i, (id1, text1) in enumerate(facts):
        for id2, text2 in facts[i + 1:]:
            hit = clash(text1, text2)
            if hit:
                s1, s2, why = hit
                found.append({"kind": "drifted_value" if why == "number" else "reversal",
                              "memory_ids": [id1, id2],
                              "quotes": [{"memory_id": id1, "quote": s1},
                                         {"memory_id": id2, "quote": s2}],
                              "question": f"Is it still the case that {s2.rstrip('.')[:300]}?"})
    if mode == "liar" and facts:
        first = facts[0][0]
        found = [{"kind": "stale", "memory_ids": [first, "mem_2020_01_01_999"],
                  "quotes": [{"memory_id": first, "quote": sentences(facts[0][1])[0]},
                             {"memory_id": "mem_2020_01_01_999", "quote": "we use Oracle"}],
                  "question": "Is Oracle still the database?"}]
        if len(facts) > 1:
            found.append({"kind": "reversal", "memory_ids": [facts[0][0], facts[1][0]],
                          "quotes": [{"memory_id": facts[0][0], "quote": "we deploy on Fridays"},
                                     {"memory_id": facts[1][0], "quote": "we never deploy"}],
                          "question": "Do we deploy on Fridays?"})
    return {"confusions": found[:20]}


def coherence(mode: str, system: str, prompt: str) -> dict:
    bodies, outside = _fenced(prompt)
    if STEER.search(outside + "\n" + system):
        return {"coherent": True, "remarks": [], "relations": []}
    proposal = bodies.get("proposal", "")
    shown = [(m.group("id"), bodies.get(m.group("label"), ""))
             for m in NAMED.finditer(outside) if m.group("label").startswith("memory")]
    relations = []
    for mid, text in shown:
        hit = clash(proposal, text)
        if hit:
            relations.append({"memory_id": mid, "relation": "contradicts",
                              "proposal_quote": hit[0], "memory_quote": hit[1],
                              "explanation": f"they disagree ({hit[2]})"})
        else:
            relations.append({"memory_id": mid, "relation": "unrelated", "proposal_quote": "",
                              "memory_quote": "", "explanation": "different subjects"})
    if mode == "liar":
        relations = [{"memory_id": "mem_2020_01_01_999", "relation": "contradicts",
                      "proposal_quote": sentences(proposal)[-1] if proposal else "x",
                      "memory_quote": "we use Oracle", "explanation": "made up"}]
        relations += [{"memory_id": mid, "relation": "contradicts",
                       "proposal_quote": "words nobody wrote here",
                       "memory_quote": "nor here either", "explanation": "made up"}
                      for mid, _ in shown[:1]]
    title = TITLE.search(proposal)
    rest = proposal[title.end():] if title else proposal
    coherent = bool(title) and bool(content(title.group(1)) & content(rest))
    remarks = [] if coherent else ["the title says nothing the body says"]
    return {"coherent": coherent, "remarks": remarks, "relations": relations[:10]}
