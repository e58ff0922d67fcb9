"""The command line's parsing pieces, shared by every subcommand: an argument parser that
exits with the usage status (see _status for every status), and the option types.

The ``check``, ``audit``, ``lint`` and ``trace`` commands (``_cli``, ``_trace_cli``) import
these from here, so that no command module imports another.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import Any

from .._runtime import terminal_columns
from .._status import ExitStatus


class _Formatter(argparse.HelpFormatter):
    # argparse builds formatters while it parses, and its default width comes from shutil
    # (see _runtime.terminal_columns).
    def __init__(self, prog: str, **options: Any) -> None:
        if options.get("width") is None:
            options["width"] = terminal_columns() - 2  # as argparse takes it from shutil
        super().__init__(prog, **options)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **options: Any) -> None:
        options.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **options)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(ExitStatus.USAGE, f"{self.prog}: error: {message}\n")


def _instant(value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an ISO-8601 date-time") from None
    if parsed.tzinfo is None:
        raise argparse.ArgumentTypeError(
            f"{value!r} has no UTC offset; write e.g. 2026-06-01T00:00:00Z")
    return parsed


def _parameter(value: str) -> tuple[str, str]:
    key, sep, val = value.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{value!r} is not KEY=VALUE")
    return key, val


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive whole number")
    return int(value)


