"""Docs that are generated or promised stay in step with the code."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from dmm.resources import resource_dir

ROOT = Path(__file__).resolve().parents[1]


def test_cli_reference_is_current():
    spec = importlib.util.spec_from_file_location("gen_cli_docs", ROOT / "tools" / "gen_cli_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == module.render(), \
        "docs/cli.md is stale: run python tools/gen_cli_docs.py"


def test_every_exit_code_is_documented():
    from dmm.errors import ExitCode

    text = (ROOT / "docs" / "exit_codes.md").read_text(encoding="utf-8")
    for code in ExitCode:
        assert f"| {int(code)} | {code.name} |" in text, code.name


def test_every_setting_is_documented_and_in_the_config_template():
    from dmm.config import DEFAULTS

    doc = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    template = (resource_dir("templates") / "config.toml.j2").read_text(encoding="utf-8")
    for section, values in DEFAULTS.items():
        for key in values:
            assert f"`{section}.{key}`" in doc, key
            assert f"{key} = " in template, key


def test_readme_opens_with_the_two_commands_and_ci_runs_the_same_tests():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = ".venv/bin/python -m pytest"
    assert "dmm query" in readme.split(test_command)[0]
    assert test_command in readme and test_command in ci


def test_this_repository_store_is_valid(tmp_path):
    import json
    import shutil

    from tests.conftest import git, run_dmm

    git(tmp_path, "init", "-q")
    shutil.copytree(ROOT / ".dmm", tmp_path / ".dmm", ignore=shutil.ignore_patterns("index"))
    proc = run_dmm("validate", "--strict", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert json.loads(proc.stdout)["files"] >= 10
