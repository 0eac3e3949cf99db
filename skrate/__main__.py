"""``python -m skrate``: the ``skrate`` command (no arguments runs the demo)."""

from __future__ import annotations

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
