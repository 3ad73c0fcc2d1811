"""Questions asked at a terminal that no Ctrl-C can slip past (the interactive resolver).

A plain blocking read loses a signal that lands after the prompt is written and before the
read begins: Python's handler only sets a flag there, and the read then waits for input
forever. Here SIGINT is caught by a handler that does nothing but let the signal's number be
written to a pipe (``signal.set_wakeup_fd``), and every wait is a ``select`` on the terminal
and that pipe: a signal that arrived at any moment since the prompt opened makes the pipe
readable, so the wait ends at once and raises KeyboardInterrupt. Reads the terminal's file
descriptor itself (canonical mode: the terminal hands over whole lines).
"""

from __future__ import annotations

import os
import select
import signal
import sys

import click


class Prompter:
    """Asks questions on ``fd`` (stdin by default) while SIGINT wakes every wait. Use it as a
    context manager: the previous handler and wakeup fd are restored on exit."""

    def __init__(self, fd: int | None = None):
        self.fd = sys.stdin.fileno() if fd is None else fd
        self.wakeup_r = self.wakeup_w = -1
        self._old_fd = -1
        self._old_handler = None
        self._pending = b""  # input read past the end of the line asked for

    def __enter__(self) -> "Prompter":
        self.wakeup_r, self.wakeup_w = os.pipe()
        for end in (self.wakeup_r, self.wakeup_w):
            os.set_blocking(end, False)
        self._old_handler = signal.signal(signal.SIGINT, _note_only)
        self._old_fd = signal.set_wakeup_fd(self.wakeup_w, warn_on_full_buffer=False)
        return self

    def __exit__(self, *exc) -> None:
        signal.set_wakeup_fd(self._old_fd)
        signal.signal(signal.SIGINT, self._old_handler)
        os.close(self.wakeup_r)
        os.close(self.wakeup_w)

    def forget(self) -> None:
        """Drop the signals noted so far (those sent while another program had the
        terminal, such as the editor)."""
        try:
            while os.read(self.wakeup_r, 512):
                pass
        except BlockingIOError:
            pass

    def read_line(self) -> str:
        """One line of input; KeyboardInterrupt on SIGINT (also one that came before the
        wait began), EOFError when the input ends."""
        data, self._pending = self._pending, b""
        while True:
            if b"\n" in data:
                line, self._pending = data.split(b"\n", 1)
                return line.decode("utf-8", "replace")
            ready, _, _ = select.select([self.fd, self.wakeup_r], [], [])
            if self.wakeup_r in ready:
                try:
                    woke = os.read(self.wakeup_r, 512)
                except BlockingIOError:
                    woke = b""
                if signal.SIGINT in woke:
                    raise KeyboardInterrupt
            if self.fd in ready:
                chunk = os.read(self.fd, 4096)
                if not chunk:
                    if data:
                        return data.decode("utf-8", "replace")
                    raise EOFError
                data += chunk

    def ask(self, text: str, default: str | None = None,
            choices: list[str] | None = None) -> str:
        """The answer to ``text`` (``default`` for an empty one; one of ``choices``)."""
        shown = f"{text} [{default}]: " if default else f"{text}: "
        while True:
            click.echo(shown, nl=False)
            sys.stdout.flush()
            answer = self.read_line().strip()
            if not answer:
                if default is not None:
                    return default
                continue
            if choices is not None and answer not in choices:
                click.echo(f"Error: {answer!r} is not one of {', '.join(choices)}.")
                continue
            return answer


def _note_only(signum, frame) -> None:
    """SIGINT while a question is open: the wakeup pipe carries it to the wait."""
