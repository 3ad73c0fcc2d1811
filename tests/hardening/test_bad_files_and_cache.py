"""One bad file is a problem of that file only (items 15 and 18); the cache is disposable:
damaged, read-only, redirected or stale, it never stops a command (items 13, 16, 17, 19, 20)."""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import git
from tests.hardening.faults import HOSTILE_FILES

GOOD = "mem_2025_01_10_001"  # the store's "Upload size ceiling on the gateway"


def _works(repo, **kw) -> None:
    """Every reading command still answers, and still finds the good memory."""
    for args in (("query", "upload size ceiling gateway", "--json"), ("status", "--json"),
                 ("show", GOOD, "--json"), ("conflicts", "list", "--json")):
        proc = repo.dmm(*args, **kw)
        assert proc.returncode == 0, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert GOOD in repo.dmm("query", "upload size ceiling gateway", "--json", **kw).stdout


@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
def test_a_hostile_file_is_reported_and_the_rest_keeps_working(store, name):
    cache = store.ws.state_dir / "cache.sqlite3"
    assert store.dmm("status").returncode == 0
    size = cache.stat().st_size
    store.write(f"project/{name}", HOSTILE_FILES[name])
    _works(store)
    proc = store.dmm("validate", "--json")
    assert proc.returncode == 1 and len(proc.stdout) < 20_000
    assert any(p["path"] == f"project/{name}" for p in json.loads(proc.stdout)["problems"])
    assert cache.stat().st_size < size + 1_000_000  # the 369-byte bomb once made 233 MB


def test_a_fifo_named_like_a_memory_hangs_nothing(store):
    os.mkfifo(store.memory / "project" / "pipe.md")
    _works(store)
    proc = store.dmm("validate")
    assert proc.returncode == 1 and "not a regular file" in proc.stdout + proc.stderr


def test_a_file_name_that_is_not_utf8_is_a_problem_of_that_file(store):
    (store.memory / "project").joinpath(os.fsdecode(b"caf\xe9.md")).write_text("x")
    _works(store)
    proc = store.dmm("validate")
    assert proc.returncode == 1 and "not valid UTF-8" in proc.stdout + proc.stderr


def test_a_settings_change_refreshes_what_the_cache_read(store):
    big = store.memory / "project" / "big.md"
    big.write_text(HOSTILE_FILES["bad_month.md"].replace("created: 2026-13-45\n", "")
                   .replace("# Bad month", "# Big") + "words " * 400)
    os.utime(big, (time.time() - 60, time.time() - 60))  # settled: no re-read for freshness
    config = store.root / ".dmm" / "config.toml"
    original = config.read_text()
    assert "\nmax_file_bytes = 262144" in original
    config.write_text(original.replace("\nmax_file_bytes = 262144", "\nmax_file_bytes = 1024"))
    assert "limit is 1024" in store.dmm("validate").stdout
    config.write_text(original.replace("\nmax_file_bytes = 262144", "\nmax_file_bytes = 8192"))
    proc = store.dmm("validate")
    assert proc.returncode == 0, proc.stdout
    assert "Big" in store.dmm("show", "project/big.md").stdout


def _cache(repo) -> Path:
    return repo.ws.state_dir / "cache.sqlite3"


def _damage_pages(repo):
    path = _cache(repo)
    data = bytearray(path.read_bytes())
    noise = random.Random(7)  # the same damage every run: a flaky test is a bug
    for offset in range(4096 * 2, len(data), 4096):
        data[offset + 100:offset + 600] = noise.randbytes(500)
    path.write_bytes(bytes(data))


def _sql(repo, statement: str):
    conn = sqlite3.connect(_cache(repo))
    conn.execute(statement)
    conn.commit()
    conn.close()


DAMAGE = {
    "corrupted pages": _damage_pages,
    "dropped postings": lambda r: _sql(r, "DROP TABLE postings"),
    "bad json row": lambda r: _sql(r, "UPDATE memories SET tags = '{{'"),
    # Damage SQLite's page checks do not see: a value of the wrong type in a row.
    "a posting that is not text": lambda r: _sql(
        r, "UPDATE postings SET term = x'00ff' WHERE term = (SELECT MIN(term) FROM postings)"),
    "bad marshal meta": lambda r: _sql(r, "UPDATE meta SET value = x'00ff' WHERE key = 'files'"),
    "cache is a folder": lambda r: (_cache(r).unlink(), _cache(r).mkdir()),
    "garbage usage log": lambda r: (r.ws.shared_state_dir / "usage.sqlite3").write_bytes(
        os.urandom(8192)),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_cache_is_rebuilt_in_one_line(store, damage):
    settled = time.time() - 60  # else the files are re-read (racy mtimes) and mask the damage
    for path in store.memory.rglob("*.md"):
        os.utime(path, (settled, settled))
    assert store.dmm("query", "gateway").returncode == 0
    DAMAGE[damage](store)
    proc = store.dmm("query", "upload size ceiling gateway", "--json")
    assert proc.returncode == 0, proc.stderr
    assert GOOD in proc.stdout
    assert "internal error" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) <= 1
    _works(store)
    usage = store.dmm("usage", "top")
    assert usage.returncode == 0 and "internal error" not in usage.stderr, usage.stderr


@pytest.mark.parametrize("command", ["status", "reindex"])
def test_stale_cache_builds_left_by_a_kill_are_removed(store, command):
    index = store.ws.state_dir
    assert store.dmm("status").returncode == 0  # the cache exists: no rebuild will run
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer runs, as after a kill
    left = [index / f"cache.sqlite3.tmp-{dead.pid}",
            index / f"cache.sqlite3.tmp-{dead.pid}-journal"]
    for path in left:
        path.write_bytes(b"x" * 100_000)
    live = index / f"cache.sqlite3.tmp-{os.getpid()}"  # a build in progress elsewhere
    live.write_bytes(b"x")
    assert store.dmm(command).returncode == 0
    assert not any(path.exists() for path in left)
    if command == "status":  # (a rebuild holds the cache's lock: no other build can be running)
        assert live.exists()


def test_a_committed_index_symlink_never_sends_the_cache_outside(store, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    index = store.root / ".dmm" / "index"
    index.symlink_to(outside)
    git(store.root, "add", "-f", ".dmm/index")
    git(store.root, "commit", "-qm", "a hostile symlink")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(store.root), str(clone))
    proc = subprocess.run([sys.executable, "-m", "dmm", "query", "upload size ceiling gateway"],
                          cwd=clone, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert list(outside.iterdir()) == []  # dmm never looks in .dmm/index/ any more
    assert (clone / ".git" / "dmm" / "cache.sqlite3").is_file()


def _as_nobody() -> list[str] | None:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"] if setpriv else None


@pytest.mark.slow
def test_a_read_only_store_still_answers(store):
    prefix = _as_nobody()
    if prefix is None:
        pytest.skip("needs setpriv to drop root's rights")
    assert store.dmm("query", "gateway").returncode == 0
    (store.memory / "project" / "limit_old.md").write_text(
        (store.memory / "project" / "limit_old.md").read_text() + "\nOne more line.\n")
    # outside pytest's own temporary folder: every pytest that starts (another session on
    # this machine) makes /tmp/pytest-of-<user> private again, which would lock the other
    # user out in the middle of the test
    base = Path(tempfile.mkdtemp(prefix="dmm-read-only-"))
    try:
        base.chmod(0o755)
        root = Path(shutil.move(store.root, base / "repo"))
        for path in [root, *root.rglob("*")]:
            if ".git" not in path.parts and not path.is_symlink():
                path.chmod(0o555 if path.is_dir() else 0o444)
        home = base / "home"  # a home the user cannot write either
        home.mkdir(mode=0o555)
        env = {**os.environ, "HOME": str(home), "GIT_CONFIG_COUNT": "1",
               "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*"}
        env.pop("DMM_DEBUG", None)
        probe = subprocess.run(prefix + [sys.executable, "-c", "import dmm"], cwd=base,
                               env=env, capture_output=True)
        if probe.returncode != 0:
            pytest.skip("dmm is not importable by an unprivileged user here")
        for args in (("query", "upload size ceiling gateway"), ("status",), ("validate",),
                     ("conflicts", "list"), ("conflicts", "scan"), ("usage", "top"),
                     ("reindex",)):
            proc = subprocess.run(prefix + [sys.executable, "-m", "dmm", "-C", str(root),
                                            *args], cwd=base, env=env, capture_output=True,
                                  text=True)
            assert proc.returncode in (0, 1), (args, proc.stderr)
            assert "PermissionError" not in proc.stderr and "internal error" not in proc.stderr
            assert "without a cache" in proc.stderr or "read-only" in proc.stderr
            if args[0] == "query":  # the pack's memories are checked, not "never scanned"
                assert "1 conflict exists among these memories" in proc.stdout, proc.stdout
    finally:
        for path in [base, *base.rglob("*")]:
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(base)


def test_template_syntax_is_printed_and_python_tags_are_refused(store, tmp_path):
    marker = tmp_path / "ran"
    store.add("project/tmpl.md", "mem_2026_07_01_001", "Templates in memories",
              "Write {{ 7 * 7 }} and {% for x in range(3) %}x{% endfor %} literally.")
    store.write("project/tag.md", "---\nid: !!python/object/apply:os.system "
                f"['touch {marker}']\n---\n# Tag\n")
    proc = store.dmm("show", "mem_2026_07_01_001")
    assert "{{ 7 * 7 }}" in proc.stdout and "49" not in proc.stdout
    assert "{% for x in range(3) %}" in store.dmm("query", "templates in memories").stdout
    assert store.dmm("validate").returncode == 1 and not marker.exists()
