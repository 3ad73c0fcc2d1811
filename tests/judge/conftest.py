"""Fixtures of the judge's tests: a stand-in model registered as an ``llm`` plugin in this
process (and loadable by a `dmm` subprocess), and a stand-in OpenAI-compatible server on
127.0.0.1 reached through llm's own OpenAI client. No network, no key: every test gets an
empty LLM_USER_PATH, so the keys, aliases and models of whoever runs the tests never count.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

STANDIN_DIR = Path(__file__).resolve().parent / "standin"
sys.path.insert(0, str(STANDIN_DIR))
# llm reads this once, when it is first imported: only the stand-in's plugin loads (with the
# default OpenAI one), never a plugin installed on the machine
os.environ.setdefault("LLM_LOAD_PLUGINS", "dmm-judge-standin")

import dmm_judge_standin as standin  # noqa: E402


@pytest.fixture(autouse=True)
def llm_home(tmp_path_factory, monkeypatch) -> Path:
    """An empty llm user folder for each test (no keys, no aliases, no extra models)."""
    home = tmp_path_factory.mktemp("llm-home")
    monkeypatch.setenv("LLM_USER_PATH", str(home))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("DMM_STANDIN_KEY", raising=False)
    standin.CALLS.clear()
    standin.RELEASE.clear()
    yield home
    standin.RELEASE.set()  # a slow call still waiting ends now


@pytest.fixture(scope="session", autouse=True)
def standin_plugin():
    """The stand-in registered with llm in this process (a no-op when llm loaded it through
    LLM_LOAD_PLUGINS already)."""
    try:
        from llm.plugins import load_plugins, pm
    except ImportError:
        yield None
        return
    load_plugins()
    if not any(getattr(p, "__name__", "") == standin.__name__ for p in pm.get_plugins()):
        pm.register(standin, name="dmm-judge-standin")
    yield standin


@pytest.fixture
def openai_standin(llm_home):
    """The stand-in OpenAI-compatible server, declared to llm as the models ``standin-openai``
    (verdicts) and ``standin-openai-ratelimit`` in extra-openai-models.yaml."""
    server = standin.serve()
    (llm_home / "extra-openai-models.yaml").write_text(
        f"- model_id: standin-openai\n  model_name: standin\n  api_base: {server.api_base}\n"
        f"  supports_schema: true\n"
        f"- model_id: standin-openai-ratelimit\n  model_name: standin-ratelimit\n"
        f"  api_base: {server.api_base}\n", encoding="utf-8")
    yield server
    server.shutdown()
    server.server_close()


def subprocess_env(llm_home: Path, log: Path | None = None) -> dict:
    """The environment for a `dmm` subprocess that must find the stand-in plugin."""
    path = [str(STANDIN_DIR)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {"PYTHONPATH": os.pathsep.join(path),
           "LLM_LOAD_PLUGINS": "dmm-judge-standin", "LLM_USER_PATH": str(llm_home)}
    if log is not None:
        env["DMM_STANDIN_LOG"] = str(log)
    return env


def set_judge(root: Path, model: str = "standin", allow: bool = True, **extra) -> None:
    """Turn the judge on in the store's config.toml (its [judge] table, which `dmm init`
    writes last, replaced) with ``model`` and ``extra`` settings, and (``allow``) allow that
    model on this clone as its person would (`git config dmm.judge MODEL`)."""
    import subprocess

    if allow:
        subprocess.run(["git", "config", "dmm.judge", model], cwd=root, check=True)
    path = root / ".dmm" / "config.toml"
    text = path.read_text(encoding="utf-8")
    lines = ["[judge]", "enabled = true", f'model = "{model}"']
    lines += [f"{k} = {str(v).lower() if isinstance(v, bool) else v}" for k, v in extra.items()]
    path.write_text(text[:text.index("\n[judge]")] + "\n" + "\n".join(lines) + "\n",
                    encoding="utf-8")
