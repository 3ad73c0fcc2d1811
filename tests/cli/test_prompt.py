"""The interactive resolver's questions: no Ctrl-C is lost, whenever it comes (before the wait
begins, during it), and Ctrl-D ends the input. Deterministic: the signal's arrival is
written into the wakeup pipe exactly as the C-level handler writes it, or sent for real to
this process, with no timing involved."""

from __future__ import annotations

import faulthandler
import os
import signal

import pytest

from dmm.cli.prompt import Prompter


@pytest.fixture
def terminal():
    """A pipe standing for the terminal's input: (read end, write end)."""
    r, w = os.pipe()
    faulthandler.dump_traceback_later(30, exit=True)  # a lost signal would wait forever
    yield r, w
    faulthandler.cancel_dump_traceback_later()
    for end in (r, w):
        try:
            os.close(end)
        except OSError:
            pass  # the test closed it: the end of input


def test_a_signal_that_came_before_the_wait_still_ends_it(terminal):
    with Prompter(terminal[0]) as prompter:
        # SIGINT arrived after the prompt was written and before select() began: the C
        # handler has written its number to the wakeup pipe, and nothing will ever come on
        # the terminal
        os.write(prompter.wakeup_w, bytes([signal.SIGINT]))
        with pytest.raises(KeyboardInterrupt):
            prompter.read_line()


def test_a_real_sigint_during_a_question_interrupts_it(terminal, capsys):
    # whatever this process inherited (a shell's background job starts with SIGINT ignored)
    # is what the prompter must put back
    before = signal.getsignal(signal.SIGINT)
    with Prompter(terminal[0]) as prompter:
        signal.raise_signal(signal.SIGINT)  # handled (noted), not raised: the wait raises
        with pytest.raises(KeyboardInterrupt):
            prompter.ask("Reason")
    assert signal.getsignal(signal.SIGINT) is before  # restored
    assert signal.set_wakeup_fd(-1) == -1


def test_answers_defaults_choices_and_the_end_of_input(terminal, capsys):
    r, w = terminal
    os.write(w, b"x\nd\n\nbecause\n")
    with Prompter(r) as prompter:
        assert prompter.ask("key", choices=["d", "q"]) == "d"  # x is refused, asked again
        assert prompter.ask("Reason", default="the default") == "the default"
        assert prompter.ask("Reason") == "because"
        os.close(w)
        with pytest.raises(EOFError):
            prompter.read_line()
    assert "'x' is not one of d, q" in capsys.readouterr().out
