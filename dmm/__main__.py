"""The `dmm` command (its entry point, and ``python -m dmm``): a prompt hook or a plain query
that the repository's running background process can answer is answered without loading the
command line (dmm/background/quick.py); everything else goes to dmm.cli."""

import sys


def main() -> None:
    from dmm.background.quick import answer

    if answer(sys.argv[1:]):
        sys.exit(0)
    from dmm.cli import main as cli

    cli()


if __name__ == "__main__":
    main()
