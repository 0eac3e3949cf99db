"""``python -m skrate``: run the demo."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``skrate`` command."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] not in ("demo",):
        print(f"skrate: unknown command {argv[0]!r}; available: demo", file=sys.stderr)
        return 2
    from ._demo import run_demo

    run_demo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
