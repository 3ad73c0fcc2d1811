"""A stand-in judge for dmm's tests and benchmarks: no network, no key, the same answer to the
same prompt every time.

- As an ``llm`` plugin (``register_models``): models ``standin`` (verdicts, below) and
  ``standin-slow``, ``standin-malformed``, ``standin-offschema``, ``standin-refuse``,
  ``standin-ratelimit``, ``standin-never`` (no conflict, ever), ``standin-invent`` (quotes
  clauses the memories do not have), ``standin-liar`` (answers the other tasks with memories
  it was not shown and quotes that are not in them), ``standin-keyed`` (needs the key
  ``standin``). A subprocess loads it with this folder on PYTHONPATH and
  ``LLM_LOAD_PLUGINS=dmm-judge-standin`` (the dist-info folder beside this file declares the
  entry point).
- As an OpenAI-compatible HTTP server on 127.0.0.1 (``serve()``), reached through llm's own
  OpenAI client with an ``extra-openai-models.yaml`` naming its ``api_base``: the same
  verdicts, and ``standin-ratelimit`` answers 429.

The verdict: the two fenced texts of the prompt (dmm.judge.prompts.fence) contradict when a
sentence of one and a sentence of the other share at least three content words and one of
them negates ("never", "not", "no", "avoid" ...) while the other does not, or they state
different numbers. It quotes the two sentences. Like a gullible model, it obeys "ignore
previous instructions" when that text stands outside every fence (then it answers "no
conflict"): the tests of the fences check that a memory's text never gets there.
"""

from __future__ import annotations

import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FENCE = re.compile(r"<<<(?P<label>[a-z][a-z0-9 _-]*) (?P<tag>[0-9a-f]+)>>>\n(?P<body>.*?)\n"
                   r"<<<end (?P=label) (?P=tag)>>>", re.S)
STEER = re.compile(r"ignore (all )?(the )?previous instructions", re.I)
NEGATION = re.compile(r"\b(never|not|no|don't|do not|avoid|stop|forbidden|must not|instead "
                      r"of|no longer)\b", re.I)
WORD = re.compile(r"[a-z][a-z0-9_]{2,}")
NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")
STOP = frozenset("the and for with that this are was were has have not never all any our "
                 "its from into use uses using when what which who will would should must "
                 "can may more less than then them they their there these those been being "
                 "also only each every some such via per out off avoid stop instead longer "
                 "don".split())
RELEASE = threading.Event()  # set by a test's teardown: slow calls then end at once
CALLS: list[dict] = []  # every call in this process: model, prompt characters


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def content(sentence: str) -> set[str]:
    return {w for w in WORD.findall(sentence.lower()) if w not in STOP}


def verdict(system: str, prompt: str) -> dict:
    """The rule-extraction verdict for a prompt with two fenced memories."""
    bodies = [m.group("body") for m in FENCE.finditer(prompt)]
    outside = FENCE.sub("", prompt) + "\n" + (system or "")
    rules = [sentences(b)[:5] for b in bodies[:2]] + [[], []]
    found = []
    if not STEER.search(outside) and len(bodies) >= 2:
        for s1 in sentences(bodies[0]):
            for s2 in sentences(bodies[1]):
                shared = content(s1) & content(s2)
                if len(shared) < 3:
                    continue
                negates = bool(NEGATION.search(s1)) != bool(NEGATION.search(s2))
                numbers = set(NUMBER.findall(s1)) != set(NUMBER.findall(s2)) and bool(
                    NUMBER.findall(s1)) and bool(NUMBER.findall(s2))
                if negates or numbers:
                    found.append({"rule1": s1, "rule2": s2, "quote1": s1, "quote2": s2,
                                  "contradiction": "one negates what the other states"
                                  if negates else "they state different values",
                                  "severity": "high"})
    return {"memory1_rules": rules[0], "memory2_rules": rules[1], "conflicts": found[:3],
            "overall_conflict": bool(found), "confidence": 0.9 if found else 0.8,
            "explanation": "contradicting statements" if found else "no contradiction"}


def answer(model_id: str, system: str, prompt: str, schema: dict | None = None) -> str:
    """What model ``model_id`` answers; logs the call (CALLS, and the file named by
    DMM_STANDIN_LOG, for tests that run dmm in a subprocess). Asked with the schema of another
    task than rule extraction (the reviewer's coherence check, the narrative pass), it answers
    that task (dmm_judge_standin_tasks)."""
    call = {"model": model_id, "prompt_chars": len(prompt) + len(system or "")}
    CALLS.append(call)
    log = os.environ.get("DMM_STANDIN_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps(call) + "\n")
    mode = model_id.removeprefix("standin").lstrip("-")
    if mode == "slow":
        RELEASE.wait(30)
    if mode == "malformed":
        return '{"memory1_rules": ["a", '
    if mode == "offschema":
        return json.dumps({"overall_conflict": "yes", "confidence": 7})
    if mode == "refuse":
        return "I'm sorry, but I can't help with comparing these documents."
    if mode == "ratelimit":
        raise RateLimitError("429 Too Many Requests")
    from dmm_judge_standin_tasks import task_for

    task = task_for(schema)
    if task is not None:
        return json.dumps(task(mode, system, prompt))
    found = verdict(system, prompt)
    if mode == "never":  # a judge that sees no conflict anywhere
        found.update(conflicts=[], overall_conflict=False, confidence=0.9)
    if mode == "invent":  # a judge that quotes clauses the memories do not have
        found.update(overall_conflict=True, confidence=0.95, conflicts=[{
            "rule1": "x", "rule2": "y", "quote1": "always use tabs for indentation",
            "quote2": "never use tabs for indentation", "contradiction": "made up",
            "severity": "high"}])
    return json.dumps(found)


class RateLimitError(Exception):
    """Named as the OpenAI client's: dmm tells errors apart by name and status code."""

    status_code = 429


# ---------------------------------------------------------------- the llm plugin

try:
    import llm
except ImportError:  # the server alone needs no llm
    llm = None

if llm is not None:
    class StandIn(llm.Model):
        can_stream = False
        supports_schema = True

        def __init__(self, model_id: str):
            self.model_id = model_id

        def execute(self, prompt, stream, response, conversation):
            text = answer(self.model_id, prompt.system or "", prompt.prompt or "",
                          getattr(prompt, "schema", None))
            response.set_usage(input=(len(prompt.prompt or "") + len(prompt.system or "")) // 4,
                               output=len(text) // 4)
            yield text

    class KeyedStandIn(StandIn):
        needs_key = "standin"
        key_env_var = "DMM_STANDIN_KEY"

    MODES = ("", "-slow", "-malformed", "-offschema", "-refuse", "-ratelimit", "-never",
             "-invent", "-liar")

    @llm.hookimpl
    def register_models(register):
        for mode in MODES:
            register(StandIn(f"standin{mode}"))
        register(KeyedStandIn("standin-keyed"))


# ---------------------------------------------------------------- the OpenAI-compatible server

class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):  # noqa: N802 - the standard library's name
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server.requests.append(body)
        if not self.path.endswith("/chat/completions"):
            return self._send(404, {"error": {"message": "not found"}})
        messages = body.get("messages", [])
        system = "\n".join(_text(m) for m in messages if m.get("role") == "system")
        prompt = "\n".join(_text(m) for m in messages if m.get("role") == "user")
        model = body.get("model", "standin")
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
        try:
            text = answer(model, system, prompt, schema)
        except RateLimitError:
            return self._send(429, {"error": {"message": "rate limited", "type": "rate_limit"}},
                              {"retry-after-ms": "1"})
        usage = {"prompt_tokens": (len(system) + len(prompt)) // 4,
                 "completion_tokens": len(text) // 4,
                 "total_tokens": (len(system) + len(prompt) + len(text)) // 4}
        self._send(200, {"id": "chatcmpl-standin", "object": "chat.completion", "created": 0,
                         "model": model, "usage": usage,
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": text}}]})

    def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def serve() -> ThreadingHTTPServer:
    """A stand-in OpenAI-compatible server on 127.0.0.1 (a free port), serving from a daemon
    thread; ``server.api_base`` is its URL, ``server.requests`` what it was sent. Stop it
    with ``server.shutdown()``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.requests = []
    server.api_base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
