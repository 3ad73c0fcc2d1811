"""Coherence check (PRD phase 2, 5.3 and 6): the judge, a language model the person
configured ([judge] in .dmm/config.toml), reads the proposed memory beside its nearest
memories in the store and says whether it is coherent in itself (title, tags, scope and body
agree) and how it relates to each of them.

Runs only while the judge is on (all_checks leaves it out otherwise: the review is then
exactly the automated one). What it finds is shown, never decides alone: a contradiction, a
repetition or an undeclared replacement of a memory in the store is a warning, and the reviewer
defers the proposal to a person, as the seed defers a proposal that conflicts with the store;
remarks on the memory itself are information. The model's answer is untrusted: a relation to a
memory it was not shown, or resting on words that are not in the two texts, is dropped. A model
that times out, errs or is unavailable leaves the automated checks' decision standing and says
so in one line. IO: the cache (the nearest memories) and the model's service.
"""

from __future__ import annotations

from dmm.proposals.checks.base import Issue, ReviewContext

NAME = "coherence"
MAX_OUTPUT_TOKENS = 2000
RELATIONS = ("contradicts", "duplicates", "supersedes", "refines", "unrelated")

SYSTEM = """You are a Memory Reviewer for the Dynamic Markdown Memory (DMM) system. Your job is \
to check one proposed memory before it is committed to the memory store, for a person who \
decides. Automated checks have already looked at its schema, size and wording.

Evaluate two things.

1. Coherence of the proposal itself:
- the title accurately reflects the content;
- the tags are relevant to the content;
- the scope (baseline, global, agent, project, ephemeral) is appropriate for the content;
- the body supports the title's claim.
Set "coherent" to false only when one of these clearly fails, and say which in "remarks" \
(one short sentence each).

2. Its relation to each existing memory you are shown (the nearest ones in the store):
- "contradicts": both cannot be followed at once (different values, one forbids what the \
other requires) for the same subject in the same context;
- "duplicates": it says the same thing as the existing memory;
- "supersedes": it replaces the existing memory (a decision changed, a newer version);
- "refines": it adds detail to the existing memory without contradicting it;
- "unrelated": different subjects or contexts, even with similar words.
For contradicts, duplicates and supersedes, copy word for word the sentence of the proposal \
and the sentence of the existing memory your judgement rests on; otherwise leave both quotes \
empty. Give one relation for each existing memory, by its id."""

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["coherent", "remarks", "relations"],
    "properties": {
        "coherent": {"type": "boolean"},
        "remarks": {"type": "array", "maxItems": 5,
                    "items": {"type": "string", "minLength": 1, "maxLength": 300}},
        "relations": {"type": "array", "maxItems": 20, "items": {
            "type": "object",
            "additionalProperties": False,
            "required": ["memory_id", "relation", "proposal_quote", "memory_quote",
                         "explanation"],
            "properties": {
                "memory_id": {"type": "string", "maxLength": 64},
                "relation": {"type": "string", "enum": list(RELATIONS)},
                "proposal_quote": {"type": "string", "maxLength": 400},
                "memory_quote": {"type": "string", "maxLength": 400},
                "explanation": {"type": "string", "maxLength": 400},
            }}},
    },
}

# what each relation found in the store asks of a person
_WARN = {"contradicts": ("contradicts", "clarify both memories, or deprecate the one that is "
                                        "wrong"),
         "duplicates": ("repeats", "update the existing memory instead"),
         "supersedes": ("replaces", "add it to `supersedes:` and deprecate the old one, or "
                                    "say how both hold")}


def wanted(workspace) -> bool:
    """Whether the reviewer runs this check: while the judge is on in this clone (the
    Workspace: its config.toml, and its person's consent where the judge asks for one)."""
    from dmm.judge.settings import judge_settings

    return judge_settings(workspace).enabled


def run(ctx: ReviewContext) -> list[Issue]:
    if ctx.proposal.type == "deprecate" or ctx.memory is None:
        return []
    if ctx.proposal.type == "resolve" and ctx.old_text is not None:
        return []  # a resolution edits an existing memory's status or scope, not its substance
    if ctx.workspace is None:
        return []  # no clone to ask whose judge it is
    from dmm.judge.client import JudgeFailed, JudgeUnavailable, open_judge
    from dmm.judge.settings import judge_settings

    settings = judge_settings(ctx.workspace)  # never the config alone: see wanted()
    nearest = _nearest(ctx, settings.k)
    try:
        judge = open_judge(settings)
        answer = judge.ask(system=_system(), prompt=_prompt(ctx, nearest), schema=SCHEMA,
                           max_output_tokens=MAX_OUTPUT_TOKENS)
    except (JudgeUnavailable, JudgeFailed) as exc:
        return [Issue(NAME, "info", f"not checked: {exc.message}; the automated checks' "
                                    "decision stands")]
    return _issues(answer.data, ctx, nearest, judge.model_id)


def _system() -> str:
    from dmm.judge.prompts import SYSTEM_DATA_RULE

    return f"{SYSTEM}\n\n{SYSTEM_DATA_RULE}"


def _nearest(ctx: ReviewContext, k: int) -> list:
    """The proposal's k nearest active memories by dmm's retrieval (the duplicate check's
    similarity, from the cache), with their text: [(Similar, Memory)]."""
    from dmm.index import read
    from dmm.index.similar import similar_memories

    found = similar_memories(ctx.conn, ctx.memory, exclude=tuple(ctx.own_paths), limit=2 * k)
    texts = read.memories_by_doc(ctx.conn, [s.doc for s in found])
    return [(s, texts[s.doc]) for s in found
            if s.doc in texts and texts[s.doc].is_active][:k]  # a retired one binds nobody


def _prompt(ctx: ReviewContext, nearest: list) -> str:
    """The proposal and its nearest memories, every text written by someone else fenced as
    data; outside the fences only dmm's own words and values it checked (the type, ids of
    the memory id pattern, scopes, similarities). Never a path: a file name is repository
    content, and a model obeys what stands outside the fences."""
    from dmm.judge.prompts import fence, new_tag

    tag = new_tag()
    p = ctx.proposal
    lines = [f"Proposal to review: {p.type} of the memory {ctx.memory.id}.",
             "The proposer's reason:", fence(p.reason or "(none given)", "reason", tag), "",
             "The proposed memory, as it would be committed:",
             fence(ctx.new_text, "proposal", tag), ""]
    if not nearest:
        lines.append("The store has no memory near it: judge its coherence only, and give no "
                     "relations.")
    else:
        lines.append(f"Its {len(nearest)} nearest memories in the store, nearest first:")
    for n, (similar, memory) in enumerate(nearest, 1):
        lines.append(f"memory {n}: id {memory.id}, scope {memory.scope}, "
                     f"similarity {similar.similarity:.2f}")
        lines.append(fence(memory.body, f"memory {n}", tag))
    return "\n".join(lines)


def _issues(data: dict, ctx: ReviewContext, nearest: list, model: str) -> list[Issue]:
    """The answer as issues, each relation checked against what the model was shown."""
    from dmm.judge.quotes import quoted
    from dmm.judge.text import one_line
    from dmm.proposals.relations import ACKNOWLEDGES, Finding

    model = one_line(model, 200)

    shown = {memory.id: memory for _, memory in nearest}
    issues, dropped = [], 0
    for relation in data["relations"]:
        kind, other = relation["relation"], shown.get(relation["memory_id"])
        if kind not in _WARN:
            continue
        if (other is None or not quoted(relation["proposal_quote"], ctx.new_text)
                or not quoted(relation["memory_quote"], other.body)):
            dropped += 1  # a memory it was not shown, or words that are in neither text
            continue
        if kind == "supersedes" and other.id in ctx.memory.supersedes:
            continue  # declared: what the proposal says it does
        verb, suggestion = _WARN[kind]
        if kind in ACKNOWLEDGES:  # shown as undeclared unless the writer said so
            ctx.findings.append(Finding(other.id, other.path, kind, NAME, _said(relation)))
        issues.append(Issue(NAME, "warning", f"the judge ({model}) finds it {verb} "
                            f"{other.path} ({other.id}): {_said(relation)}",
                            suggestion=suggestion))
    if not data["coherent"]:
        issues += [Issue(NAME, "info", f"the judge ({model}) notes: {one_line(r, 300)}")
                   for r in data["remarks"]]
    if dropped:
        issues.append(Issue(NAME, "info", f"{dropped} of the judge's findings left out: they "
                                          "named a memory it was not shown or quoted words "
                                          "that are not in the texts"))
    return issues


def _said(relation: dict) -> str:
    """The two quoted sentences and the model's reason, on one line."""
    from dmm.judge.text import one_line

    said = (f"{one_line(relation['proposal_quote'], 400)!r} vs "
            f"{one_line(relation['memory_quote'], 400)!r}")
    why = one_line(relation["explanation"], 400)
    return f"{said} ({why})" if why else said
