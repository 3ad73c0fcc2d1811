"""What `dmm mcp` offers an agent, as plain data: every tool's name, description, input and
output JSON Schema and annotations, the resources, and the server's instructions. Importing
this module costs nothing (no SDK, no core), so `dmm mcp` answers `initialize`, `tools/list`
and the resource lists from it at once (dmm.agents.mcp_stdio) while the SDK loads, and the
SDK's server (dmm.agents.mcp_server) is built from the same tables: the two cannot drift apart.

The schemas are the contract an agent reads: parameter descriptions, enums, ranges and item
counts say what is accepted, and ``dispatch`` checks every call against them (jsonschema)
before any core call, so a wrong argument is a clear tool error naming it.
"""

from __future__ import annotations

from typing import Any

from dmm.proposals.model import PROPOSAL_ID

NAME = "dmm"
INSTRUCTIONS = """\
dmm is this repository's memory: rules, facts, decisions and procedures kept as markdown under
.dmm/memory/ and reviewed like code. Four things are yours to do: query (memory_query with the
task in one sentence, before a task; baseline memories always apply), propose (memory_propose,
when something the next session should know is missing or wrong; a person reviews it), check
(conflicts_check_content for a draft, conflicts_check for the memories you rely on), and flag
(conflict_flag, when two memories disagree). When you propose a memory, say how it relates to
its nearest memories (memory_propose's relations: supersedes, contradicts, refines, duplicates,
unrelated): you know what it means; dmm's detection works on words. You may list, revise and
withdraw your own open proposals. Approving, rejecting, resolving and dismissing are decisions people make; no tool of
this server makes them, and dmm refuses them from an agent's shell."""

# the enums of the core, repeated here so that this module imports nothing (a test keeps them
# equal to dmm.memory.model, dmm.memory.select, dmm.proposals.model and dmm.conflicts.model)
SCOPES = ("baseline", "global", "agent", "project", "ephemeral")
STATUSES = ("active", "deprecated")
SORTS = ("path", "id", "created", "priority", "tokens", "title", "scope")
PROPOSAL_TYPES = ("create", "update", "deprecate", "promote")
RELATIONS = ("supersedes", "contradicts", "refines", "duplicates", "unrelated")
MAX_RELATIONS, MAX_NOTE_CHARS = 20, 500
CONFLICT_TYPES = ("contradictory", "duplicate", "supersession", "scope_overlap", "stale")
MAX_BUDGET = 20_000
PAGE = 20  # memory_list's default page
MAX_PAGE = 100

_MEMORY = {"type": "string", "minLength": 1, "maxLength": 300,
           "description": "A memory's id (mem_2026_03_14_007) or its path under .dmm/memory/ "
                          "(project/api/errors.md)."}
# the one proposal-id shape (dmm.proposals.model): 8 random hex digits now, 4 from older dmm
_PROPOSAL_ID = {"type": "string", "pattern": f"^{PROPOSAL_ID.pattern}$",
                "description": "A proposal id, as memory_propose returned it "
                               "(prop_20261125_093000_a1b2c3d4)."}
_CONTENT = {"type": "string", "minLength": 1, "maxLength": 1_048_576, "description": (
    "The whole memory file: YAML frontmatter between '---' lines with tags (1-10), priority "
    "(0.0-1.0) and confidence (experimental, active, stable), then '# Title' and the text. "
    "id, scope, status and created may be left out: a new memory gets them, an update keeps "
    "the memory's own.")}
_PATCH = {"type": "string", "minLength": 1, "maxLength": 1_048_576, "description": (
    "update only, instead of content: a unified diff of the memory file (diff -u, git diff). "
    "Hunks are placed by their context lines, as patch does; line numbers may be off.")}
_REASON = {"type": "string", "minLength": 1, "maxLength": 2000,
           "description": "Why: what you learned, or what is wrong. The reviewer reads it."}
_PROPOSE_INPUT = {
    "type": {"type": "string", "enum": list(PROPOSAL_TYPES), "description": (
        "create (the default): a new memory (content). update: change one (content or "
        "patch). deprecate: retire one. promote: move one to another scope (new_scope).")},
    "path": {"type": "string", "minLength": 1, "maxLength": 300, "description": (
        "The memory file under .dmm/memory/, its folder being its scope: "
        "project/api/errors.md. For update, deprecate and promote, an id works too.")},
    "reason": _REASON,
    "content": _CONTENT,
    "patch": _PATCH,
    "new_scope": {"type": "string", "enum": list(SCOPES),
                  "description": "promote only: the scope the memory moves to."},
    "expires": {"type": "string", "pattern": "^(keep|drop|[0-9]{4}-[0-9]{2}-[0-9]{2})$",
                "description": "promote only, when the memory has an expiry date: keep it, "
                               "drop it, or a new YYYY-MM-DD."},
    "relations": {"type": "array", "maxItems": MAX_RELATIONS, "description": (
        "create and update: how the new content relates to the memories nearest to it (the "
        "`neighbours` conflicts_check_content or an earlier answer listed), one entry each. "
        "supersedes: it replaces that memory, which is retired when a person approves. "
        "contradicts: the two disagree, and you know it. refines: it adds detail to that "
        "memory. duplicates: it says the same. unrelated: near in words only. A claim the "
        "reviewer shows beside its own findings; it never approves anything."),
        "items": {"type": "object", "required": ["memory_id", "relation"],
                  "additionalProperties": False, "properties": {
                      "memory_id": {"type": "string", "minLength": 1, "maxLength": 300,
                                    "description": "The other memory's id (or path)."},
                      "relation": {"type": "string", "enum": list(RELATIONS)},
                      "note": {"type": "string", "maxLength": MAX_NOTE_CHARS,
                               "description": "Why, in a sentence (optional)."}}}},
}
_OPEN = {"type": "object", "additionalProperties": True}


def _obj(properties: dict, required: tuple[str, ...] = ()) -> dict:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


def _out(properties: dict, required: tuple[str, ...]) -> dict:
    return {"type": "object", "properties": properties, "required": list(required)}


_ENTRY = {"type": "object", "required": ["memory_id", "path", "title"], "properties": {
    "memory_id": {"type": "string"}, "path": {"type": "string"}, "title": {"type": "string"}}}
_CONFLICTS = {"type": "array", "items": _OPEN}
_NEIGHBOURS = {"type": "array", "items": {
    "type": "object", "required": ["memory_id", "path", "title", "passage"], "properties": {
        "memory_id": {"type": "string"}, "path": {"type": "string"},
        "title": {"type": "string"}, "relevance": {"type": "number"},
        "passage": {"type": "string"}, "declared": {"type": ["string", "null"]}}}}
_PROPOSAL_OUT = _out({"success": {"type": "boolean"},
                      "proposal_id": {"type": ["string", "null"]},
                      "precheck_errors": {"type": "array", "items": {"type": "string"}},
                      "precheck_warnings": {"type": "array", "items": {"type": "string"}},
                      "neighbours": _NEIGHBOURS,
                      "declare": {"type": ["string", "null"]},
                      "relations": {"type": "array", "items": _OPEN}},
                     ("success",))


def _limits(schema: dict) -> str:
    """A parameter's ranges in words: Codex passes a tool's schema to its model without
    minimum, maximum, lengths and item counts, so the description says them too."""
    said = []
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        said.append(f"from {low:,} to {high:,}")
    elif low is not None:
        said.append(f"at least {low:,}")
    elif high is not None:
        said.append(f"at most {high:,}")
    if schema.get("maxLength") is not None:
        said.append(f"at most {schema['maxLength']:,} characters")
    few, many = schema.get("minItems"), schema.get("maxItems")
    if few is not None and few == many:
        said.append(f"exactly {few} items")
    elif few is not None and many is not None:
        said.append(f"{few} to {many} items")
    elif many is not None:
        said.append(f"at most {many} items")
    elif few is not None:
        said.append(f"at least {few} item{'s' if few > 1 else ''}")
    if schema.get("uniqueItems"):
        said.append("no item twice")
    return "; ".join(said)


def _described(schema: dict) -> dict:
    """``schema`` (a parameter's) with its ranges said in its description, its items' too."""
    out = dict(schema)
    if isinstance(out.get("items"), dict):
        out["items"] = _described(out["items"])
    limits = _limits(out)
    if limits:
        text = out.get("description", "").rstrip()
        said = limits[0].upper() + limits[1:] + "."
        out["description"] = f"{text}{'' if text.endswith('.') else '.'} {said}" if text \
            else said
    return out


def _tool(name: str, title: str, description: str, inputs: dict, output: dict, *,
          read_only: bool, idempotent: bool) -> dict:
    inputs = dict(inputs, properties={k: _described(v) for k, v in inputs["properties"].items()})
    return {"name": name, "title": title, "description": description, "inputSchema": inputs,
            "outputSchema": output,
            "annotations": {"title": title, "readOnlyHint": read_only,
                            "destructiveHint": False, "idempotentHint": idempotent,
                            "openWorldHint": False}}


TOOLS: list[dict] = [
    _tool("memory_query", "Memory Pack for a task",
          "The memories a task needs: every baseline memory, then the most relevant others "
          "within the token budget, with the conflicts known among them. Call it before a "
          "task, with the task in one sentence (not a whole file or log).",
          _obj({"task": {"type": "string", "minLength": 1, "maxLength": 2000,
                         "description": "The task or question, in one sentence."},
                "budget": {"type": "integer", "minimum": 100, "maximum": MAX_BUDGET,
                           "description": "Tokens of memory to return (default: the "
                                          "repository's query.default_budget)."},
                "scopes": {"type": "array", "items": {"type": "string",
                                                      "enum": list(SCOPES[1:])},
                           "maxItems": 4, "uniqueItems": True,
                           "description": "Only memories of these scopes (baseline always "
                                          "comes)."},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 50},
                         "maxItems": 10, "description": "Only memories with one of these tags."},
                "exclude_ephemeral": {"type": "boolean",
                                      "description": "Leave out short-lived session notes."}},
               ("task",)),
          _out({"query": {"type": "string"}, "baseline": {"type": "array", "items": _ENTRY},
                "retrieved": {"type": "array", "items": _ENTRY},
                "excluded": _OPEN, "stats": _OPEN, "warnings": {"type": "array"},
                "conflicts": _CONFLICTS}, ("baseline", "retrieved", "stats")),
          read_only=True, idempotent=True),
    _tool("memory_show", "One memory",
          "One memory in full: its fields and text.",
          _obj({"memory": _MEMORY}, ("memory",)),
          _out({"memory_id": {"type": "string"}, "path": {"type": "string"},
                "content": {"type": "string"}}, ("memory_id", "path")),
          read_only=True, idempotent=True),
    _tool("memory_list", "List memories",
          "The store's memories without their text, a page at a time (`next_cursor` asks for "
          "the next page): by scope, tag, status, folder and age, in the order asked.",
          _obj({"scope": {"type": "string", "enum": list(SCOPES)},
                "tag": {"type": "string", "maxLength": 50},
                "status": {"type": "string", "enum": list(STATUSES)},
                "path_prefix": {"type": "string", "maxLength": 300,
                                "description": "A folder under .dmm/memory/: project/api"},
                "older_than": {"type": "integer", "minimum": 0,
                               "description": "Days since `created`, at least."},
                "newer_than": {"type": "integer", "minimum": 0,
                               "description": "Days since `created`, at most."},
                "sort": {"type": "string", "enum": list(SORTS)},
                "reverse": {"type": "boolean",
                            "description": "Largest, newest or last first."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE,
                          "description": f"Memories per page (default {PAGE})."},
                "cursor": {"type": "string", "maxLength": 40,
                           "description": "The next_cursor of the previous page."}}),
          _out({"memories": {"type": "array", "items": _ENTRY}, "total": {"type": "integer"},
                "next_cursor": {"type": ["string", "null"]},
                # while another dmm builds the index for the first time (agents/unindexed.py)
                "partial": {"type": "boolean"}, "note": {"type": "string"}},
               ("memories", "total")),
          read_only=True, idempotent=True),
    _tool("memory_propose", "Propose a memory change",
          "Propose a change to memory: a proposal branch that a person (or the reviewer they "
          "run) decides; nothing changes until then. create and update take the whole file "
          "(content), update may take a diff (patch) instead, deprecate takes only the path, "
          "promote takes new_scope. The answer lists what the reviewer will check; a refused "
          "proposal says why in precheck_errors. One open proposal per file: revise or "
          "withdraw your own with proposal_revise or proposal_withdraw. "
          "Judge before you write: for a create or an update the answer lists the five "
          "nearest memories (neighbours, each with its most relevant passage); say how your "
          "memory relates to each in relations (supersedes, contradicts, refines, duplicates, "
          "unrelated). Best: call conflicts_check_content first, then propose once with "
          "relations. Without relations the proposal is still made, and `declare` asks for "
          "them (proposal_revise adds them). Your model judges five pairs; a person reads "
          "your declaration beside dmm's own findings.",
          _obj(_PROPOSE_INPUT, ("path", "reason")),
          _PROPOSAL_OUT, read_only=False, idempotent=False),
    _tool("proposal_status", "Where a proposal stands",
          "Whether a proposal is open (pending, deferred) or decided (approved, modified, "
          "rejected, withdrawn), and by whom.",
          _obj({"proposal_id": _PROPOSAL_ID}, ("proposal_id",)),
          _out({"proposal_id": {"type": "string"}, "status": {"type": "string"},
                "open": {"type": "boolean"}}, ("proposal_id", "status", "open")),
          read_only=True, idempotent=True),
    _tool("proposal_list", "Your open proposals",
          "The open proposals you made through this server (pending or deferred), oldest "
          "first: what you can revise or withdraw.",
          _obj({}),
          _out({"proposals": {"type": "array", "items": _OPEN}, "proposed_by":
                {"type": "string"}}, ("proposals",)),
          read_only=True, idempotent=True),
    _tool("proposal_revise", "Revise your proposal",
          "Replace one of your own open proposals with a corrected one for the same file (the "
          "same fields as memory_propose; type and path default to the old proposal's). The "
          "old one is withdrawn only once the new one is recorded.",
          _obj({"proposal_id": _PROPOSAL_ID, "reason": _REASON,
                **{k: v for k, v in _PROPOSE_INPUT.items() if k != "reason"},
                "type": dict(_PROPOSE_INPUT["type"], description=(
                    "The old proposal's unless given: create, update, deprecate or promote."))},
               ("proposal_id", "reason")),
          _out({"success": {"type": "boolean"}, "proposal_id": {"type": ["string", "null"]},
                "replaces": {"type": "string"}}, ("success",)),
          read_only=False, idempotent=False),
    _tool("proposal_withdraw", "Withdraw your proposal",
          "Withdraw one of your own open proposals (recorded, with the reason). Withdrawing "
          "your own proposal decides nothing about memory; others' proposals are not yours "
          "to withdraw.",
          _obj({"proposal_id": _PROPOSAL_ID, "reason": _REASON}, ("proposal_id", "reason")),
          _out({"success": {"type": "boolean"}, "proposal_id": {"type": "string"},
                "decision": {"type": "string"}}, ("success", "proposal_id")),
          read_only=False, idempotent=False),
    _tool("conflicts_check", "Conflicts of memories",
          "Open conflicts (contradictions, duplicates, stale facts ...) that involve any of "
          "these memories: check the memories you are about to rely on. An unknown id or path "
          "is an error.",
          _obj({"memories": {"type": "array", "items": _MEMORY, "minItems": 1,
                             "maxItems": 50, "uniqueItems": True,
                             "description": "Ids or paths of the memories to check."}},
               ("memories",)),
          _out({"has_conflicts": {"type": "boolean"}, "conflicts": _CONFLICTS,
                "checked": {"type": "array", "items": {"type": "string"}}},
               ("has_conflicts", "conflicts")),
          read_only=True, idempotent=True),
    _tool("conflicts_check_content", "Check a draft",
          "For a draft memory (the whole file, as memory_propose takes it, or just its text): "
          "the memories it would conflict with, the most similar ones, and its five nearest "
          "(neighbours, each with its most relevant passage) to declare relations to in "
          "memory_propose. Call it before proposing.",
          _obj({"content": _CONTENT,
                "path": {"type": "string", "maxLength": 300,
                         "description": "Where the draft would go (project/api/x.md)."}},
               ("content",)),
          _out({"potential_conflicts": _CONFLICTS,
                "similar_memories": {"type": "array", "items": _OPEN},
                "neighbours": _NEIGHBOURS,
                "problems": {"type": "array"}}, ("potential_conflicts", "similar_memories")),
          read_only=True, idempotent=True),
    _tool("conflict_flag", "Flag a conflict",
          "Record that two memories disagree, for a person to resolve (a commit under "
          ".dmm/conflicts/). Flagging the same pair again changes nothing.",
          _obj({"memories": {"type": "array", "items": _MEMORY, "minItems": 2,
                             "maxItems": 2, "uniqueItems": True,
                             "description": "The two memories, by id or path."},
                "description": {"type": "string", "minLength": 1, "maxLength": 2000,
                                "description": "What contradicts what."},
                "type": {"type": "string", "enum": list(CONFLICT_TYPES),
                         "description": "default: contradictory"}},
               ("memories", "description")),
          _out({"conflict_id": {"type": "string"}, "created": {"type": "boolean"},
                "status": {"type": "string"}}, ("conflict_id", "created")),
          read_only=False, idempotent=True),
]
BY_NAME = {t["name"]: t for t in TOOLS}

RESOURCES = [{"uri": "dmm://boot", "name": "BOOT.md", "mimeType": "text/markdown",
              "description": "How agents use this repository's memory"}]
RESOURCE_TEMPLATES = [{"uriTemplate": "dmm://memory/{memory_id}", "name": "memory",
                       "mimeType": "text/markdown",
                       "description": "One memory file, by id or path"}]


def tools_list() -> dict:
    """The `tools/list` result."""
    return {"tools": TOOLS}


def resources_list() -> dict:
    """The `resources/list` result."""
    return {"resources": RESOURCES}


def templates_list() -> dict:
    """The `resources/templates/list` result."""
    return {"resourceTemplates": RESOURCE_TEMPLATES}


def check_arguments(name: str, arguments: dict) -> None:
    """Refuse arguments the tool's schema does not accept, naming the argument."""
    import jsonschema

    from dmm.errors import InvalidInputError

    tool = BY_NAME.get(name)
    if tool is None:
        raise InvalidInputError(f"no tool {name!r}: the tools are "
                                f"{', '.join(BY_NAME)}")
    validator = jsonschema.Draft202012Validator(tool["inputSchema"])
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
    if errors:
        error = errors[0]
        where = ".".join(str(p) for p in error.path) or "arguments"
        raise InvalidInputError(f"{where}: {_said(error)}")


def _said(error) -> str:
    """jsonschema's message without echoing a long value back."""
    kind = error.validator
    if kind == "enum":
        return "must be one of " + ", ".join(map(str, error.validator_value))
    if kind in ("minimum", "maximum"):
        return f"must be {'at least' if kind == 'minimum' else 'at most'} {error.validator_value}"
    if kind in ("minItems", "maxItems"):
        return f"{'at least' if kind == 'minItems' else 'at most'} {error.validator_value} items"
    if kind in ("minLength", "maxLength"):
        return (f"{'at least' if kind == 'minLength' else 'at most'} "
                f"{error.validator_value} characters")
    if kind == "additionalProperties":
        return error.message.split(" (")[0].replace("Additional properties are not allowed",
                                                    "unknown argument")
    if kind == "type":
        return f"must be a{'n' if str(error.validator_value)[0] in 'aeiou' else ''} " \
               f"{error.validator_value}"
    if kind == "pattern":
        described = str(error.schema.get("description", "")).split(":")[0].split(",")[0]
        return "is not in the expected form" + (f": {described}" if described else "")
    return error.message[:200]
