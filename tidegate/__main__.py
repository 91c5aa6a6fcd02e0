"""``python -m tidegate ...`` runs the tidegate command line."""

import sys

from tidegate.cli import main

if __name__ == "__main__":
    sys.exit(main())
