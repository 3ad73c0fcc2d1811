"""Allow ``python -m dmm``."""

from dmm.cli import main

if __name__ == "__main__":
    main()
