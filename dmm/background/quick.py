"""The short way of the two calls an agent makes most: the prompt hooks (`dmm agent hook
EVENT`) and a plain `dmm query TASK [--json] [--budget N]`, answered by the repository's
running background process without importing click or anything above the index.

`dmm` starts here (dmm/__main__.py). On a loaded two-core machine importing the command line
(click and dmm.cli) costs 150-300 ms, more than the whole answer of a warm background process
(60-110 ms at 50,000 memories): a hook that pays it on every prompt misses its 250 ms. So when
the call is one of these forms and the process is running (its socket is there), this module
asks it and prints its answer, escaped as the command line escapes it (dmm/controls.py);
anything else, and any answer that is not a plain success (no process yet, another build, an
error to report, a hook past half its deadline), goes on to the command line, which decides
as it always did (``answer`` returns False, stdin kept for it). The background process makes
a hook's answer final (the baseline when the pack could not be made, the session's record of
it: dmm.agents.hook.answer_in_process), so the short way prints only what it is given.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from pathlib import Path

_began: list[float] = []  # when ``answer`` began in this process: the hook's deadline counts
_timed_out: list[bool] = []  # the process was asked here and did not answer in time
DEADLINE_S = 0.9  # a hook answers within this, whatever holds the cache (DMM_HOOK_DEADLINE_MS)
DEADLINE_ENV = "DMM_HOOK_DEADLINE_MS"
EVENTS = ("session-start", "user-prompt-submit")


def deadline() -> float:
    """The hook's deadline in seconds (DMM_HOOK_DEADLINE_MS; 0: none)."""
    try:
        return float(os.environ.get(DEADLINE_ENV, "")) / 1000
    except ValueError:
        return DEADLINE_S


def elapsed() -> float:
    """Seconds the short way spent in this process before it handed the call on (0 when it
    was not tried: a test calling the command line in its own process)."""
    return time.monotonic() - _began[0] if _began else 0.0


def timed_out() -> bool:
    """Whether the short way asked the running process and it did not answer in time (the
    command line then answers without asking it again: the deadline is half gone)."""
    return bool(_timed_out)


def answer(argv: list[str]) -> bool:
    """Answer the command line ``argv`` from the background process and return True; False
    when the command line must answer it (nothing has been written then)."""
    _began[:] = [time.monotonic()]
    try:
        if len(argv) == 3 and argv[:2] == ["agent", "hook"] and argv[2] in EVENTS:
            return _hook(argv[2])
        if argv[:1] == ["query"]:
            asked = _query_args(argv[1:])
            return asked is not None and _query(*asked)
    except Exception:  # noqa: BLE001 - the command line answers, and says what is wrong
        return False
    return False


def _ask(start: Path, request: dict, answer_wait: float) -> dict | None:
    """The answer of the background process of the work tree holding ``start``, when one runs
    and answers with success; else None. Neither the settings nor the store are read here
    (their parser alone costs a loaded machine 50-100 ms): the process checks both for a
    "quick" request, as the command line would before asking."""
    from dmm.background import client
    from dmm.gitdirs import LANDING_JOURNAL, STATE_DIR, known_git_dirs, work_tree_root

    root = work_tree_root(start.resolve())
    dirs = known_git_dirs(root) if root is not None else None
    if dirs is None or (dirs[0] / LANDING_JOURNAL).exists():
        return None  # git must say where the repository is, or a landing must be finished
    state_dir = dirs[1] / STATE_DIR
    if not client.socket_path(state_dir).exists():
        return None  # no process running: the command line starts it
    words, note = client.by_words()
    extra = {"semantic": False, "note": note} if words else {}
    try:
        got = client.ask(root, state_dir, dict(request, quick=True, **extra),
                         start_if_absent=False, start_wait=answer_wait,
                         answer_wait=answer_wait)
    except client.TimedOut:
        _timed_out[:] = [True]
        return None
    except client.Unavailable:
        return None
    return got if got.get("ok") and isinstance(got.get("out"), str) else None


def _hook(event: str) -> bool:
    seconds = deadline() or 60.0
    raw = _read_input(seconds / 2)
    if raw is None:
        return False  # the input did not end in time: the command line's deadline answers
    try:
        payload = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return False
    if not isinstance(payload, dict):
        return False
    cwd = payload.get("cwd")
    start = Path(str(cwd)) if cwd and Path(str(cwd)).is_dir() else Path.cwd()
    # as the command line asks (dmm/cli/agent_cmd.py): a quarter of the deadline for the
    # index, half of it for the answer; past that the command line answers with what is left
    got = _ask(start, {"op": "hook", "event": event, "payload": payload, "wait": seconds / 4},
               answer_wait=max(0.05, seconds / 2 - elapsed()))
    if got is None:
        return False
    _write(got["out"])
    return True


def _read_input(within: float) -> str | None:
    """The hook's input (stdin to its end), read within ``within`` seconds; None when it did
    not end by then. Either way the command line can read it again (sys.stdin is replaced by
    what was read, followed by the rest)."""
    import select

    if sys.stdin.isatty():
        sys.stdin = io.StringIO("")
        return ""
    fd, chunks, ends = sys.stdin.fileno(), [], time.monotonic() + within
    encoding, errors = sys.stdin.encoding, sys.stdin.errors
    rest = sys.stdin.buffer
    while True:
        left = ends - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            sys.stdin = _Rest(b"".join(chunks), rest, encoding, errors)
            return None
        data = os.read(fd, 1 << 16)
        if not data:
            break
        chunks.append(data)
    raw = b"".join(chunks).decode(encoding, errors)
    sys.stdin = io.StringIO(raw)
    return raw


class _Rest:
    """Standard input for the command line after the short way read its ``head``: that, then
    whatever is still to come."""

    def __init__(self, head: bytes, rest, encoding: str, errors: str) -> None:
        self.head, self.rest, self.encoding, self.errors = head, rest, encoding, errors

    def isatty(self) -> bool:
        return False

    def read(self) -> str:
        return (self.head + self.rest.read()).decode(self.encoding, self.errors)


def _query_args(args: list[str]) -> tuple[str, int | None, bool] | None:
    """(task, budget, --json) of `dmm query TASK [--json] [--budget N]`; None for any other
    form (the command line parses it, and says what is wrong)."""
    task, budget, as_json = None, None, False
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--json":
            as_json = True
        elif arg == "--budget" and rest and rest[0].isdigit():
            budget = int(rest.pop(0))
        elif arg.startswith("--budget=") and arg[len("--budget="):].isdigit():
            budget = int(arg[len("--budget="):])
        elif task is None and arg and not arg.startswith("-"):
            task = arg
        else:
            return None
    if task is None or (budget is not None and budget < 1):
        return None
    return task, budget, as_json


def _query(task: str, budget: int | None, as_json: bool) -> bool:
    from dmm.background.client import ANSWER_WAIT_S, query_request

    got = _ask(Path.cwd(), query_request(task, budget=budget, as_json=as_json),
               answer_wait=ANSWER_WAIT_S)
    if got is None:
        return False
    if as_json:  # the note goes to stderr as well, for the person (dmm/cli/query_cmd.py)
        for note in got.get("notes") or ():
            sys.stderr.write(_shown(f"note: {note}\n"))
        sys.stderr.flush()
    _write(got["out"])
    return True


def _shown(text: str) -> str:
    from dmm.controls import shown

    return shown(text)


def _write(text: str) -> None:
    """Print the answer; a reader that went away (a closed pipe) ends it here, never sends
    the call on to the command line to be answered twice."""
    try:
        sys.stdout.write(_shown(text))
        sys.stdout.flush()
    except OSError:
        try:  # flushed at exit otherwise, into the closed pipe: a second error
            sys.stdout = open(os.devnull, "w", encoding="utf-8")
        except OSError:
            pass
