"""The OpenAPI 3.1 document of `dmm serve`, built from the endpoint table
(dmm.agents.http_routes): served at /openapi.json; docs/openapi.json is a copy, kept equal by
a test.

Pure: no IO.
"""

from __future__ import annotations

import re
from typing import Any

from dmm.agents.http_routes import OPERATIONS, Operation


ERROR_SCHEMA = {"type": "object", "required": ["error", "exit_code", "status"], "properties": {
    "error": {"type": "string"}, "hint": {"type": ["string", "null"]},
    "exit_code": {"type": "integer", "description": "dmm's exit code (docs/exit_codes.md)"},
    "status": {"type": "integer"}}}


def openapi() -> dict:
    """The OpenAPI 3.1 document of ``OPERATIONS`` (served at /openapi.json; docs/openapi.json
    is a copy, kept equal by a test)."""
    from dmm import __version__

    paths: dict[str, dict] = {}
    schemas: dict[str, dict] = {"Error": ERROR_SCHEMA}
    for op in OPERATIONS:
        path = re.sub(r"\{(\w+):\w+\}", r"{\1}", op.path)
        item: dict[str, Any] = {"summary": op.summary, "operationId": _operation_id(op)}
        parameters = [{"name": name, "in": "path", "required": True,
                       "schema": {"type": "string"}} for name in re.findall(r"\{(\w+)", path)]
        if op.params:
            schema = op.params.model_json_schema()
            parameters += [{"name": name, "in": "query",
                            "required": name in schema.get("required", ()),
                            "schema": {k: v for k, v in prop.items() if k != "title"}}
                           for name, prop in schema["properties"].items()]
        if parameters:
            item["parameters"] = parameters
        if op.body:
            schemas[op.body.__name__] = op.body.model_json_schema()
            item["requestBody"] = {"required": True, "content": {"application/json": {
                "schema": {"$ref": f"#/components/schemas/{op.body.__name__}"}}}}
        ok = "201" if op.created else "200"
        item["responses"] = {ok: {"description": "the result, as `--json` of the matching "
                                                 "dmm command prints it (docs/api.md)",
                                  "content": {"application/json": {"schema": {
                                      "type": "object"}}}}}
        for status, why in _errors(op):
            item["responses"][status] = {"description": why, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Error"}}}}
        if op.decides:
            item["description"] = ("A person's decision: needs a person's token "
                                   "(`dmm serve --token NAME`); the token's name is recorded "
                                   "as the reviewer." + (" Not with `propose: true`."
                                                         if callable(op.decides) else ""))
        paths.setdefault(path, {})[op.method.lower()] = item
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "dmm", "version": __version__,
                 "description": "The HTTP API of dmm's memory store (`dmm serve`). "
                                "See docs/api.md."},
        "paths": paths,
        "components": {"schemas": schemas, "securitySchemes": {
            "token": {"type": "http", "scheme": "bearer",
                      "description": "A token given to `dmm serve --token/--agent-token`."}}},
    }
    doc["security"] = [{"token": []}, {}]  # a token only when the server was given some
    return doc


def _operation_id(op: Operation) -> str:
    words = re.sub(r"\{[^}]+\}", "one", op.path).strip("/").replace("-", "/").split("/")
    return op.method.lower() + "_" + "_".join(w for w in words if w)


def _errors(op: Operation) -> list[tuple[str, str]]:
    out = [("400", "bad input"), ("401", "a token is needed and was not sent")]
    if op.decides:
        out.append(("403", "a person's token is needed"))
    if "{" in op.path:
        out.append(("404", "no such memory, proposal or conflict"))
    if op.method == "POST":
        out += [("409", "already decided, or no longer merges"),
                ("415", "the body is not application/json")]
    return out
