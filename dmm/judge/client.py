"""Ask a language model, through the ``llm`` package: the only module of dmm that imports it.

``llm`` (an optional extra: ``pip install 'dmm-memory[judge]'``) reaches OpenAI, Anthropic,
Gemini and local models (Ollama, llama.cpp, gpt4all ...) through its plugins, with keys kept
by ``llm keys``. dmm names the model the person configured in ``[judge]`` and nothing else:
no model is chosen for them, and with the judge off nothing is imported or sent.

Everything a model answers is untrusted: it must be one JSON object (at most MAX_ANSWER_CHARS)
that validates against the caller's JSON schema, or the call fails with JudgeFailed and a
one-line reason. A call that outlasts the timeout fails the same way; the caller's
deterministic answer then stands.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from dmm.errors import DmmError
from dmm.judge.settings import JudgeSettings

MAX_ANSWER_CHARS = 64_000  # a verdict is a few hundred characters; more is not one
HOW_TO_TURN_ON = ("pip install 'dmm-memory[judge]', set [judge] enabled = true and model = "
                  "\"MODEL\" (an llm model id) in .dmm/config.toml, and allow it on this "
                  "clone with `git config dmm.judge MODEL` (docs/conflicts.md#the-judge)")

# llm plugins whose models run on this machine: memory text stays here
_LOCAL_PLUGINS = ("llm_gpt4all", "llm_llama_cpp", "llm_mlx", "llm_llamafile", "llm_gguf",
                  "llm_transformers", "llm_onnx")


class JudgeUnavailable(DmmError):
    """No judge to ask: it is off, ``llm`` is not installed, the model is unknown or needs a
    key nobody gave. The message says how to turn the judge on."""


class JudgeFailed(DmmError):
    """The judge was asked and gave no usable answer: a timeout, a rate limit, a refusal, an
    error of the service, an answer that is not the JSON asked for."""


@dataclass(frozen=True)
class Answer:
    data: dict  # the model's JSON object, valid against the schema asked for
    model: str  # the model's id
    input_tokens: int | None  # as the service counted them, when it says
    output_tokens: int | None
    seconds: float


def open_judge(settings: JudgeSettings) -> Judge:
    """The configured judge, ready to ask; JudgeUnavailable (saying how to turn it on) when
    there is none."""
    if settings.blocked:
        raise JudgeUnavailable(settings.blocked)
    if not settings.enabled:
        raise JudgeUnavailable(f"the judge is off: to turn it on, {HOW_TO_TURN_ON}")
    if not settings.model:
        raise JudgeUnavailable(f"the judge has no model: {HOW_TO_TURN_ON}")
    try:
        import llm
    except ImportError:
        raise JudgeUnavailable(f"the judge needs the llm package, which is not installed: "
                               f"{HOW_TO_TURN_ON}") from None
    try:
        model = llm.get_model(settings.model)
    except llm.UnknownModelError:
        raise JudgeUnavailable(f"the judge's model {settings.model!r} is not one llm knows: "
                               "`llm models` lists them (a plugin adds more: `llm install "
                               "llm-ollama`); set [judge] model in .dmm/config.toml") from None
    except Exception as exc:  # a broken plugin or models file: llm's own words
        raise JudgeUnavailable(f"llm could not load its models: {_line(exc)}") from None
    if getattr(model, "needs_key", None):
        try:
            model.get_key()
        except llm.NeedsKeyException:
            raise JudgeUnavailable(
                f"the judge's model {model.model_id} needs a key: `llm keys set "
                f"{model.needs_key}`" + (f" or set {model.key_env_var}"
                                         if getattr(model, "key_env_var", None) else ""),
            ) from None
    return Judge(model, settings)


class Judge:
    """One configured model. ``where`` says where the text of a prompt goes."""

    def __init__(self, model: Any, settings: JudgeSettings):
        self._model = model
        self.settings = settings
        self.model_id: str = model.model_id
        self.where: str = where_text_goes(model)

    def ask(self, *, system: str, prompt: str, schema: dict,
            max_output_tokens: int | None = None) -> Answer:
        """The model's answer to ``prompt`` as a JSON object valid against ``schema``, within
        the settings' timeout; JudgeFailed with a one-line reason otherwise."""
        started = time.perf_counter()
        text, usage = self._call(system, prompt, schema, max_output_tokens)
        data = parse_answer(text, schema, self.model_id)
        return Answer(data, self.model_id, usage[0], usage[1], time.perf_counter() - started)

    def _call(self, system: str, prompt: str, schema: dict,
              max_output_tokens: int | None) -> tuple[str, tuple[int | None, int | None]]:
        """Run the model in a thread joined with the timeout: llm has no timeout of its own
        for every plugin. A thread still waiting after the timeout is left to finish (a
        daemon: it never holds the process open) and its answer is dropped."""
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                options = {}
                fields = getattr(getattr(self._model, "Options", None), "model_fields", {})
                if max_output_tokens and "max_tokens" in fields:
                    options["max_tokens"] = max_output_tokens
                response = self._model.prompt(
                    prompt, system=system, stream=False,
                    schema=schema if getattr(self._model, "supports_schema", False) else None,
                    **options)
                text = response.text()
                usage = response.usage()
                box["answer"] = (text, (usage.input, usage.output))
            except BaseException as exc:  # noqa: BLE001 - reported in the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=run, name="dmm-judge", daemon=True)
        worker.start()
        worker.join(self.settings.timeout)
        if worker.is_alive():
            raise JudgeFailed(f"{self.model_id} did not answer within "
                              f"{self.settings.timeout:g} s ([judge] timeout)")
        if "error" in box:
            raise _failure(box["error"], self.model_id, self.where)
        return box["answer"]


def _failure(exc: BaseException, model_id: str, where: str) -> DmmError:
    """The error a model's exception becomes, in one line, whatever plugin raised it (their
    classes are told apart by name and status code, so that no plugin's module is imported
    here)."""
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        raise exc
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    if name == "NeedsKeyException":
        return JudgeUnavailable(f"{model_id} needs a key: {_line(exc)}")
    if status == 429 or "RateLimit" in name:
        return JudgeFailed(f"{model_id} is rate limited ({where}): try again later")
    if "Timeout" in name:
        return JudgeFailed(f"{model_id} timed out ({where})")
    if "Connection" in name:
        return JudgeFailed(f"{model_id} could not be reached at {where}")
    if status in (401, 403) or "Authentication" in name or "PermissionDenied" in name:
        return JudgeUnavailable(f"{model_id} refused the key ({where}): `llm keys set` it "
                                "again")
    return JudgeFailed(f"{model_id} failed: {name}: {_line(exc)}")


def parse_answer(text: str, schema: dict, model_id: str) -> dict:
    """``text`` as the one JSON object ``schema`` describes; JudgeFailed otherwise. One code
    fence around the whole answer (```json ... ```) is taken off: models add it unasked."""
    if text is None or not text.strip():
        raise JudgeFailed(f"{model_id} answered nothing (a refusal?)")
    if len(text) > MAX_ANSWER_CHARS:
        raise JudgeFailed(f"{model_id} answered {len(text)} characters, more than the "
                          f"{MAX_ANSWER_CHARS} a verdict may take")
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and body.count("```") == 2:
        body = body[3:-3].removeprefix("json").strip()
    if not body.startswith("{"):
        raise JudgeFailed(f"{model_id} answered in prose, not the JSON asked for (a "
                          f"refusal?): {_line(body)}")
    try:
        data = json.loads(body, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise JudgeFailed(f"{model_id} answered malformed JSON: {_line(exc)}") from None
    if not isinstance(data, dict):
        raise JudgeFailed(f"{model_id} answered JSON that is not an object")
    import jsonschema

    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is not None:
        at = "/".join(str(p) for p in error.absolute_path) or "the answer"
        raise JudgeFailed(f"{model_id} answered JSON outside the schema at {at}: "
                          f"{_line(error.message)}")
    return data


def _no_constant(name: str) -> None:
    """NaN and the infinities are not JSON (RFC 8259), though Python reads them: NaN would
    pass every bound of a schema, since no comparison with it is true."""
    raise ValueError(f"{name} is not a JSON number")


def where_text_goes(model: Any) -> str:
    """Where a prompt to ``model`` is sent, for a person to read: the API base URL of an
    OpenAI-compatible model, "this machine" for a plugin that runs models locally, the
    provider's service otherwise."""
    base = getattr(model, "api_base", None)
    if base:
        return str(base)
    module = type(model).__module__ or ""
    top = module.split(".")[0]
    if module.startswith("llm.default_plugins.openai"):
        return "https://api.openai.com/v1 (OpenAI)"
    if top in _LOCAL_PLUGINS:
        return f"this machine (local model, {top.replace('_', '-')})"
    if top == "llm_ollama":
        host = os.environ.get("OLLAMA_HOST") or "http://127.0.0.1:11434"
        return f"Ollama at {host}"
    return f"the service behind the llm plugin {top.replace('_', '-')}"


def _line(value: object, limit: int = 200) -> str:
    """One line of at most ``limit`` characters: error texts come from services and models."""
    from dmm.judge.text import one_line

    return one_line(value, limit)
