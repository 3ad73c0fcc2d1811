"""Shared benchmark helpers: the dmm command, whole-process timing, a repository with a
synthetic store, and byte-compiling the package the way a wheel install would."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

from generate import generate

# The console script a user runs, from the same environment as this interpreter.
DMM = [str(Path(sys.executable).parent / "dmm")]
# Tasks that agents ask (the synthetic store answers each).
TASKS = ["add retries with backoff to the partner client", "how are invoices numbered",
         "which database migrations need a review", "rotate the api keys of a service"]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p * (len(ordered) - 1))))]


def timed(cmd: list[str], cwd: Path) -> tuple[float, int]:
    """Wall time (s) and peak RSS (KiB) of one process."""
    import time

    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode()}")
    return elapsed, usage.ru_maxrss


def make_repo(root: Path, size: int, dmm: list[str] = DMM) -> list[Path]:
    """A git repository at ``root`` with dmm initialised (no hooks; by ``dmm``, whose settings
    it writes) and ``size`` synthetic memories committed; returns the memory files."""
    run = lambda *c: subprocess.run(c, cwd=root, check=True, capture_output=True)  # noqa: E731
    run("git", "init", "-q", "-b", "main")
    run("git", "config", "user.name", "bench")
    run("git", "config", "user.email", "bench@example.com")
    run(*dmm, "init", "--no-hooks")
    files = generate(root / ".dmm" / "memory", size)
    run("git", "add", "-A")
    run("git", "commit", "-qm", "store")
    return files


@contextlib.contextmanager
def warm_store(size: int, prefix: str) -> Iterator[Path]:
    """A temporary repository with ``size`` memories and a warm cache, removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        root = tmp / "repo"
        root.mkdir()
        make_repo(root, size)
        timed([*DMM, "query", "warm the cache"], root)
        yield root
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def byte_compile() -> None:
    """An installed wheel ships byte-compiled modules; an editable checkout run with
    PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module on every command."""
    import compileall

    import dmm

    compileall.compile_dir(Path(dmm.__file__).parent, quiet=1)


def add_baseline_option(ap) -> None:
    ap.add_argument("--baseline", metavar="PYTHON",
                    help="the python of another install of dmm (e.g. a venv with main "
                         "installed): measured on the same stores, alternating with this one "
                         "(rows 'before' and 'after')")


def installs(baseline: str | None) -> list[tuple[str, str]]:
    """(label, python) of each install measured: this one, and the baseline first if given."""
    here = ("after" if baseline else "", sys.executable)
    return [("before", baseline), here] if baseline else [here]


def dmm_of(python: str) -> list[str]:
    """The console script of the install whose interpreter is ``python``."""
    return [str(Path(python).parent / "dmm")]


def byte_compile_install(python: str) -> None:
    """byte_compile() for another install (its own interpreter compiles its own package)."""
    subprocess.run([python, "-c", "import compileall, os, dmm; "
                    "compileall.compile_dir(os.path.dirname(dmm.__file__), quiet=1)"],
                   check=True, cwd=tempfile.gettempdir())


def load() -> str:
    """The load averages, to print beside the figures (other work on this machine)."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} / {fifteen:.1f} (1 / 5 / 15 min)"


def processes() -> Iterator[tuple[int, list[str], str]]:
    """(pid, argv, working folder) of every running process this user may read."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue
            yield int(entry.name), argv, cwd


def daemon_pid(root: Path) -> int | None:
    """The background process serving ``root``, whichever install started it (asking it over
    the socket would stop one of another build), or None."""
    want = ["-m", "dmm.background.daemon", str(root)]
    for pid, args, _ in processes():
        if any(args[i:i + 3] == want for i in range(len(args))):
            return pid
    return None


def stop_daemon(root: Path) -> None:
    """Stop the background process of ``root``, whichever install started it."""
    import signal
    import time

    pid = daemon_pid(root)
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)
    for _ in range(200):
        if not Path(f"/proc/{pid}").exists():
            return
        time.sleep(0.05)


def synthetic_vectors(root: Path) -> None:
    """Random unit vectors for every memory, stored as the semantic index would store them
    (a background process then has nothing to embed; timings only, never quality)."""
    import numpy as np

    from dmm.index.refresh import open_fresh
    from dmm.semantic import chunks, model, vectors
    from dmm.workspace import Workspace

    ws = Workspace(root)
    conn, _ = open_fresh(ws)
    rng = np.random.default_rng(7)
    rows = []
    for title, body in conn.execute("SELECT m.title, b.body FROM memories m JOIN bodies b "
                                    "ON b.doc = m.doc"):
        n = len(chunks.passages(title, body))
        v = rng.standard_normal((n, model.DIMENSION)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        # under the id of the pinned model and of the derived one: an install of either finds them
        for model_id in {model.MODEL_ID, model.model_id()}:
            rows.append((chunks.text_key(model_id, title, body), n,
                         v.astype(np.float16).tobytes()))
    ws.shared_state_dir.mkdir(exist_ok=True)
    store = vectors.connect(ws.shared_state_dir)
    vectors.store(store, rows)
    store.close()
    conn.close()


def compare_reads(root: Path, commands: dict[str, list[str]], baseline: str | None,
                  runs: int, rounds: int) -> list[dict]:
    """Whole-process wall times of read commands (``commands``: name -> dmm arguments) for
    each install, without and with the repository's background process running, in
    alternating rounds on the store at ``root`` (its vectors ready: synthetic_vectors)."""
    import statistics

    got: dict[tuple, list[float]] = {}
    for _ in range(rounds):
        for label, python in installs(baseline):
            dmm = dmm_of(python)
            for background in (False, True):
                stop_daemon(root)
                if background:
                    subprocess.run([*dmm, "query", "start the background process"], cwd=root,
                                   check=True, capture_output=True,
                                   env={**os.environ, "DMM_SEMANTIC": "on"})
                for name, args in commands.items():
                    timed([*dmm, *args], root)  # once, unmeasured
                    got.setdefault((label, background, name), []).extend(
                        timed([*dmm, *args], root)[0] for _ in range(runs))
    stop_daemon(root)
    return [{"install": label, "background": background, "command": name,
             "p50": statistics.median(v), "p10": pct(v, 0.1), "p90": pct(v, 0.9), "n": len(v)}
            for (label, background, name), v in got.items()]


def reads_on_store(size: int, commands: dict[str, list[str]], baseline: str | None,
                   runs: int, rounds: int, prepare=None) -> list[dict]:
    """compare_reads on a new store of ``size`` memories (cache built, ``prepare(root)`` run,
    vectors ready), removed afterwards."""
    import time

    tmp = Path(tempfile.mkdtemp(prefix=f"dmm_bench_reads_{size}_"))
    try:
        make_repo(tmp, size)
        subprocess.run([*DMM, "reindex"], cwd=tmp, check=True, capture_output=True,
                       env={**os.environ, "DMM_SEMANTIC": "off"})
        if prepare:
            prepare(tmp)
        synthetic_vectors(tmp)
        time.sleep(2.1)  # past the cache's racy-mtime window
        return compare_reads(tmp, commands, baseline, runs, rounds)
    finally:
        stop_daemon(tmp)
        shutil.rmtree(tmp, ignore_errors=True)


def report_reads(args, commands: dict[str, list[str]], prepare=None) -> None:
    """Measure and print ``commands`` for each of ``args.sizes`` (the --reads modes)."""
    if args.baseline:
        byte_compile_install(args.baseline)
    print(f"started: {load()}", flush=True)
    results = [(int(s), reads_on_store(int(s), commands, args.baseline, args.runs,
                                       args.rounds, prepare))
               for s in args.sizes.split(",")]
    print(f"finished: {load()}")
    print(READS_HEADER)
    for size, rows in results:
        print_reads(size, rows)


def print_reads(size: int, rows: list[dict]) -> None:
    for r in rows:
        print(f"| {size:,} | `dmm {r['command']}` | {r['install'] or '-'} "
              f"| {'running' if r['background'] else 'none'} | {r['p50'] * 1000:.0f} ms "
              f"| {r['p10'] * 1000:.0f} ms | {r['p90'] * 1000:.0f} ms | {r['n']} |")


READS_HEADER = ("| memories | command | install | background process | p50 | p10 | p90 | runs |\n"
                "|---:|---|---|---|---:|---:|---:|---:|")
