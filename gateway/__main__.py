"""``python -m gateway [options]`` is ``tidegate serve [options]``."""

import sys

from tidegate.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
