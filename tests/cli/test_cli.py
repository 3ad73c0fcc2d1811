"""The command line as a user meets it: real subprocesses in real git repositories."""

from __future__ import annotations

import json

from dmm.errors import ExitCode
from tests.conftest import git, run_dmm


def no_traceback(proc) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr


# --- init -------------------------------------------------------------------------------------

def test_init_creates_the_layout_and_is_idempotent(git_repo):
    first = run_dmm("init", cwd=git_repo)
    assert first.returncode == 0, first.stderr
    for rel in ("config.toml", "BOOT.md", "memory/baseline/dmm_usage.md",
                "memory/deprecated/.gitkeep", "conflicts/.gitkeep"):
        assert (git_repo / ".dmm" / rel).exists(), rel
    snapshot = {p: p.read_bytes() for p in (git_repo / ".dmm").rglob("*") if p.is_file()
                and "index" not in p.parts}
    second = run_dmm("init", cwd=git_repo)
    assert second.returncode == 0
    assert "nothing changed" in second.stderr
    assert snapshot == {p: p.read_bytes() for p in (git_repo / ".dmm").rglob("*")
                        if p.is_file() and "index" not in p.parts}


def test_init_never_overwrites_user_files(git_repo):
    (git_repo / ".dmm").mkdir()
    (git_repo / ".dmm" / "config.toml").write_text("[query]\ndefault_budget = 900\n")
    proc = run_dmm("init", "--json", cwd=git_repo)
    data = json.loads(proc.stdout)
    assert ".dmm/config.toml" in data["existing"]
    assert (git_repo / ".dmm" / "config.toml").read_text() == "[query]\ndefault_budget = 900\n"


def test_the_index_is_ignored_by_git_and_the_rest_can_be_committed(git_repo):
    run_dmm("init", cwd=git_repo)
    run_dmm("query", "anything", cwd=git_repo)
    status = git(git_repo, "status", "--porcelain", "--untracked-files=all")
    assert ".dmm/index" not in status
    assert ".dmm/config.toml" in status


def test_outside_a_git_repository_is_a_clear_error(tmp_path):
    proc = run_dmm("init", cwd=tmp_path)
    assert proc.returncode == ExitCode.NOT_A_REPOSITORY
    assert "not inside a git repository" in proc.stderr
    no_traceback(proc)


def test_commands_before_init_say_so(git_repo):
    proc = run_dmm("query", "x", cwd=git_repo)
    assert proc.returncode == ExitCode.NOT_INITIALIZED
    assert "dmm init" in proc.stderr


# --- query ------------------------------------------------------------------------------------

def test_query_markdown_and_json(repo):
    repo.add("baseline/b.md", "mem_2026_01_01_001", "Be brief", "Answer briefly.",
             scope="baseline")
    repo.add("project/api.md", "mem_2026_01_02_001", "Errors use problem details",
             "API errors are RFC 9457 problem details.", tags="[api, errors]")
    md = repo.dmm("query", "how should the API report errors", "--budget", "800")
    assert md.returncode == 0, md.stderr
    assert "# Memory Pack" in md.stdout and "## Baseline" in md.stdout
    assert "project/api.md" in md.stdout and "relevance" in md.stdout
    data = json.loads(repo.dmm("query", "how should the API report errors", "--json").stdout)
    assert data["retrieved"][0]["memory_id"] == "mem_2026_01_02_001"
    assert data["stats"]["budget"] == 1200  # the configured default


def test_query_from_a_subfolder_and_with_C(repo, tmp_path):
    repo.add("project/api.md", "mem_2026_01_02_001", "Errors use problem details")
    sub = repo.root / "src" / "deep"
    sub.mkdir(parents=True)
    assert json.loads(repo.dmm("query", "errors", "--json", cwd=sub).stdout)["retrieved"]
    proc = run_dmm("-C", str(sub), "query", "errors", "--json", cwd=tmp_path)
    assert json.loads(proc.stdout)["retrieved"]


def test_query_reads_the_task_from_stdin(repo):
    repo.add("project/api.md", "mem_2026_01_02_001", "Errors use problem details")
    proc = repo.dmm("query", "-", "--json", input="problem details for errors\n")
    assert json.loads(proc.stdout)["retrieved"][0]["memory_id"] == "mem_2026_01_02_001"


def test_query_input_errors(repo):
    empty = repo.dmm("query", "   ")
    assert empty.returncode == ExitCode.INVALID_INPUT and "task is empty" in empty.stderr
    zero = repo.dmm("query", "x", "--budget", "0")
    assert zero.returncode == ExitCode.USAGE
    bad_scope = repo.dmm("query", "x", "--scope", "baseline")
    assert bad_scope.returncode == ExitCode.USAGE
    for proc in (empty, zero, bad_scope):
        no_traceback(proc)


def test_a_broken_config_is_reported_with_its_key(repo):
    (repo.root / ".dmm" / "config.toml").write_text("[query]\ndefault_budgt = 5\n")
    proc = repo.dmm("query", "x")
    assert proc.returncode == ExitCode.INVALID_INPUT
    assert "unknown setting query.default_budgt" in proc.stderr
    (repo.root / ".dmm" / "config.toml").write_text("[query\n")
    proc = repo.dmm("status")
    assert proc.returncode == ExitCode.INVALID_INPUT and "not valid TOML" in proc.stderr
    no_traceback(proc)


def test_bad_memory_files_never_break_a_query(repo):
    repo.add("project/ok.md", "mem_2026_01_02_001", "Retry with backoff")
    repo.write("project/binary.md", b"\x00\xff" * 50)
    repo.write("project/yaml.md", "---\nid: : :\n---\n")
    proc = repo.dmm("query", "retry", "--json")
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    assert data["retrieved"][0]["memory_id"] == "mem_2026_01_02_001"
    assert any("have errors" in w for w in data["warnings"])


# --- show -------------------------------------------------------------------------------------

def test_show_by_id_and_by_path(repo):
    path = repo.add("project/api.md", "mem_2026_01_02_001", "Errors use problem details")
    by_id = repo.dmm("show", "mem_2026_01_02_001")
    assert by_id.stdout == path.read_text(encoding="utf-8")
    by_path = repo.dmm("show", ".dmm/memory/project/api.md", "--json")
    assert json.loads(by_path.stdout)["memory_id"] == "mem_2026_01_02_001"
    relative = repo.dmm("show", "project/api.md", "--json")
    assert json.loads(relative.stdout)["title"] == "Errors use problem details"


def test_show_errors(repo):
    repo.add("project/a.md", "mem_2026_01_02_001", "A")
    repo.add("project/b.md", "mem_2026_01_02_001", "B")
    repo.write("project/bad.md", "---\nid: mem_2026_01_02_009\n---\n# Bad\n")
    missing = repo.dmm("show", "mem_2099_01_01_001")
    assert missing.returncode == ExitCode.NOT_FOUND
    dup = repo.dmm("show", "mem_2026_01_02_001")
    assert dup.returncode == ExitCode.INVALID_INPUT and "used by 2 files" in dup.stderr
    bad = repo.dmm("show", "project/bad.md")
    assert bad.returncode == ExitCode.INVALID_INPUT and "cannot be read" in bad.stderr
    outside = repo.dmm("show", "../../etc/passwd")
    assert outside.returncode == ExitCode.INVALID_INPUT and "outside .dmm/memory/" in outside.stderr
    for proc in (missing, dup, bad, outside):
        no_traceback(proc)


# --- validate ---------------------------------------------------------------------------------

def test_validate_passes_on_a_clean_store(repo):
    repo.add("project/a.md", "mem_2026_01_02_001", "A")
    proc = repo.dmm("validate")
    assert proc.returncode == 0
    assert "1 file checked: 0 errors" in proc.stderr


def test_validate_reports_every_problem_and_fails(repo):
    repo.write("project/a.md", "---\ntags: x\nscope: global\nprority: 1\n---\n# A\n")
    repo.add("project/b.md", "mem_2026_01_02_001", "B")
    repo.add("project/c.md", "mem_2026_01_02_001", "C")
    proc = repo.dmm("validate", "--json")
    assert proc.returncode == ExitCode.PROBLEMS_FOUND
    data = json.loads(proc.stdout)
    assert not data["valid"]
    fields = {(p["path"], p["field"]) for p in data["problems"]}
    for expected in [("project/a.md", "id"), ("project/a.md", "tags"), ("project/a.md", "scope"),
                     ("project/a.md", "prority"), ("project/a.md", "priority"),
                     ("project/b.md", "id"), ("project/c.md", "id")]:
        assert expected in fields, expected


def test_validate_strict_fails_on_warnings_and_paths_narrow_it(repo):
    repo.add("project/a.md", "mem_2026_01_02_001", "A", extra="note: typo field\n")
    repo.write("global/b.md", "broken")
    assert repo.dmm("validate", "project/a.md").returncode == 0
    assert repo.dmm("validate", "--strict", "project/a.md").returncode == 1
    assert repo.dmm("validate").returncode == 1


# --- status and reindex -----------------------------------------------------------------------

def test_status_counts_and_cache_state(repo):
    repo.add("project/a.md", "mem_2026_01_02_001", "A")
    repo.add("global/b.md", "mem_2026_01_02_002", "B", scope="global")
    repo.add("deprecated/c.md", "mem_2026_01_02_003", "C", status="deprecated")
    data = json.loads(repo.dmm("status", "--json").stdout)
    assert data["memories"]["total"] == 3
    assert data["memories"]["by_scope"] == {"project": 2, "global": 1}
    assert data["memories"]["by_status"] == {"active": 2, "deprecated": 1}
    text = repo.dmm("status").stdout
    assert "project" in text and "problems: 0 errors, 0 warnings" in text


def test_reindex_rebuilds(repo):
    repo.add("project/a.md", "mem_2026_01_02_001", "A")
    data = json.loads(repo.dmm("reindex", "--json").stdout)
    assert data["memories"] == 1 and data["files"] == 1


def test_help_is_there_for_every_command(repo):
    for cmd in ("init", "query", "show", "validate", "status", "reindex"):
        proc = repo.dmm(cmd, "--help")
        assert proc.returncode == 0 and "Usage: dmm" in proc.stdout, cmd
    assert "dmm query" in repo.dmm("--help").stdout


def test_unknown_command_is_a_usage_error(repo):
    proc = repo.dmm("frobnicate")
    assert proc.returncode == ExitCode.USAGE and "No such command" in proc.stderr
