"""The command line's shared pieces: an argument parser that exits with the usage status
(see _status for every status), the option types, the limits options, writing an output
file, and what the shell does when standard output cannot be written.

The ``check``, ``audit``, ``lint``, ``trace``, ``sign`` and ``keygen`` commands import these
from here, so that no command module imports another.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from .._exceptions import STANDARD_OUTPUT, ConfigurationError, WriteFailed
from .._files import claim, write_file
from .._instants import instant
from .._nearest import SUGGESTED, did_you_mean
from .._runtime import terminal_columns
from .._status import ExitStatus
from .._visible import has_lone_surrogate
from ..pipeline.intake import Limits


class _Formatter(argparse.HelpFormatter):
    # argparse builds formatters while it parses, and its default width comes from shutil
    # (see _runtime.terminal_columns).
    def __init__(self, prog: str, **options: Any) -> None:
        if options.get("width") is None:
            options["width"] = terminal_columns() - 2  # as argparse takes it from shutil
        super().__init__(prog, **options)


class _Parser(argparse.ArgumentParser):
    """A parser that refuses with the usage status, and refuses what a command does not
    take with that command's own usage and the option or choice it resembles.

    argparse hands what a subcommand does not recognise back to the top-level parser, which
    says "unrecognized arguments" under its own usage (``ioa-check [-h] [--version] COMMAND
    ...``), naming none of the options that were meant. Here a command's parser (one without
    subcommands of its own) says it itself, and says it before anything else: argparse would
    first complain of a required option that the mistyped one was meant to be."""

    def __init__(self, *args: Any, **options: Any) -> None:
        options.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **options)

    def error(self, message: str) -> None:  # type: ignore[override]
        from ..reporters import visible

        self.print_usage(sys.stderr)
        # argparse quotes the words it refuses as they were given ("unrecognized arguments:
        # ..."): a word of a hostile command line (a file name a hook passes) may hold an
        # escape sequence, which is shown, never sent to the terminal.
        self.exit(ExitStatus.USAGE, f"{self.prog}: error: {visible(message, surrogates=False)}\n")

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None,
                         ) -> tuple[argparse.Namespace, list[str]]:
        command = not any(isinstance(action, argparse._SubParsersAction)
                          for action in self._actions)
        if command:
            unknown = self._unknown_options(sys.argv[1:] if args is None else args)
            if unknown:
                self.error(f"unrecognized arguments: {' '.join(unknown)}")
        opts, extras = super().parse_known_args(args, namespace)
        if command and extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return opts, extras

    def _parse_optional(self, arg_string: str) -> Any:
        """argparse's reading of a word as an option or not, but a word that names a file
        that exists and is none of this parser's options (by name, ``OPTION=VALUE`` or an
        abbreviation) is the file: pre-commit passes the changed files after the hook's
        options, with no ``--`` before them (there is no place for one), and a file named
        ``-x.json`` must be checked, not refused as an unknown option."""
        if self._names_a_file(arg_string):
            return None  # a positional argument
        return super()._parse_optional(arg_string)

    def _names_a_file(self, word: str) -> bool:
        if not word.startswith("-") or word in ("-", "--"):
            return False
        flag = word.partition("=")[0]
        options = self._option_string_actions
        return flag not in options and not (
            self.allow_abbrev and flag.startswith("--")
            and any(o.startswith(flag) for o in options if o.startswith("--"))
        ) and os.path.lexists(word)

    def _unknown_options(self, words: Sequence[str]) -> list[str]:
        """The long options among ``words`` that this parser does not take (neither by name
        nor as an abbreviation argparse accepts), each with the option it resembles."""
        options = [flag for flag in self._option_string_actions if flag.startswith("--")]
        unknown = []
        for word in words:
            if word == "--":
                break  # what follows is positional, whatever it looks like
            # argparse takes a word with a space for a value, never for an option.
            if not word.startswith("--") or " " in word or self._names_a_file(word):
                continue
            flag = word.partition("=")[0]
            if flag in options or (self.allow_abbrev and any(o.startswith(flag) for o in options)):
                continue
            unknown.append(flag)
        # The first few are named with the options they resemble, the rest counted: a hostile
        # command line (thousands of options, as many as the system lets through) costs the
        # refusal little, and its message stays short.
        named = [flag + did_you_mean(flag, options) for flag in unknown[:SUGGESTED]]
        rest = len(unknown) - len(named)
        return named + ([f"and {rest} more"] if rest else [])

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's refusal of a value outside an option's choices, with the choice it
        resembles."""
        if (action.choices is not None and isinstance(value, str)
                and value not in action.choices):
            choices = ", ".join(map(repr, action.choices))
            hint = did_you_mean(value, [str(choice) for choice in action.choices])
            raise argparse.ArgumentError(
                action, f"invalid choice: {value!r}{hint} (choose from {choices})")
        super()._check_value(action, value)


def _instant(value: str) -> datetime:
    """``--at``: an instant with its UTC offset, every fraction digit kept (it is compared
    with validity limits written to the tenth of a microsecond and finer)."""
    try:
        return instant(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"{exc}; write e.g. 2026-06-01T00:00:00Z") from None


def _parameter(value: str) -> tuple[str, str]:
    key, sep, val = value.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{value!r} is not KEY=VALUE")
    if has_lone_surrogate(value):
        # Bytes that are not UTF-8 (PEP 383 hands them over as lone surrogates): no task
        # parameter is such bytes, and no output could carry them as text.
        shown = value.encode("utf-8", "backslashreplace").decode("utf-8")
        raise argparse.ArgumentTypeError(f"{shown!r} is not text: its bytes are not UTF-8")
    return key, val


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive whole number")
    return int(value)




# The limits of one document, each an option of the check and audit commands (Limits' fields).
_LIMITS = (
    ("--max-bytes", "max_bytes", "size limit of one document in bytes (default: 1 MiB)"),
    ("--max-depth", "max_depth", "nesting depth limit of one document (default: 64)"),
    ("--max-values", "max_values",
     "limit of JSON values (members and array items) in one document (default: 16384)"),
    ("--max-contexts", "max_contexts",
     "limit of context objects in one document (default: 16)"),
    ("--max-terms", "max_terms",
     "limit of term definitions in one document's contexts (default: 1024)"),
)


def add_checker_arguments(parser: argparse.ArgumentParser, engines: Sequence[str], *,
                          profile_required: bool = False) -> None:
    """The options a Checker is built from, as every command that builds one takes them
    (check, serve): the profile, the receiver's registrations and artifacts, retrieval, the
    engine and the limits."""
    parser.add_argument("--profile", required=profile_required, metavar="NAME|PATH",
                        help="installed profile name or profile file (Turtle)")
    parser.add_argument("--capability", action="append", default=[], metavar="FILE",
                        help="the receiver's own capability registration (repeatable)")
    parser.add_argument("--alignment", action="append", default=[], metavar="FILE|NAME",
                        help="an offered alignment artifact, by path or shipped name (repeatable)")
    parser.add_argument("--allow-remote", action="append", default=[], metavar="ORIGIN",
                        help="allow remote retrieval from this origin, e.g. "
                             "https://contexts.example.org (repeatable; off by default)")
    parser.add_argument("--allow-private-addresses", action="store_true",
                        help="let allowed origins resolve to loopback or private addresses "
                             "(for services on your own network; weakens SSRF protection)")
    parser.add_argument("--engine", choices=engines, default="compiled",
                        help="compiled (default) or reference: pyld, the SHACL shapes in full and "
                             "the named SPARQL queries on every check; both decide the same")
    add_limits(parser)
    add_shape_timeout(parser)


def add_shape_timeout(parser: argparse.ArgumentParser) -> None:
    """--shape-timeout, the same in every command that evaluates a profile's shapes."""
    from ..pipeline.bounded import SHAPE_TIMEOUT

    parser.add_argument("--shape-timeout", type=_positive_seconds, default=SHAPE_TIMEOUT,
                        metavar="SECONDS",
                        help="stop an evaluation of the profile's SHACL shapes by pySHACL "
                             "(SHACL-SPARQL, and lint's SHACL-for-SHACL check) after this "
                             f"many seconds (default {SHAPE_TIMEOUT:g}): the check is then "
                             "indeterminate, constraint.shape-unevaluable")


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gib": 1 << 30}


def _size(text: str) -> int:
    """A positive number of bytes, with a binary unit or none: 512MiB, 2GiB, 1048576."""
    match = re.fullmatch(r"\s*([0-9]+)\s*([A-Za-z]*)\s*", text)
    unit = _UNITS.get(match.group(2).lower()) if match else None
    if match is None or unit is None or int(match.group(1)) == 0:
        raise argparse.ArgumentTypeError(
            f"not a size: {text!r} (bytes, or a whole number with KiB, MiB or GiB)")
    return int(match.group(1)) * unit


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


def _non_negative_seconds(text: str) -> float:
    """As :func:`_positive_seconds`, zero allowed (at once), however it is spelled."""
    try:
        if float(text) == 0:
            return 0.0
    except ValueError:
        pass  # said as _positive_seconds says it
    return _positive_seconds(text)


def add_limits(parser: argparse.ArgumentParser) -> None:
    defaults = Limits()
    for flag, field, help_text in _LIMITS:
        parser.add_argument(flag, type=_positive, default=getattr(defaults, field), dest=field,
                            metavar="N", help=help_text)


def limits_of(opts: argparse.Namespace) -> Limits:
    return Limits(**{field: getattr(opts, field) for _, field, _ in _LIMITS})


def write_output(path: str | None, data: bytes, *, private: bool = False,
                 ours: Callable[[bytes], bool] | None = None, what: str = "") -> None:
    """``data`` written to the file ``path`` (standard output when None). ``private``: a new
    file only its owner can read, never one that exists (a key is not overwritten).
    Otherwise a file there is replaced only if ``ours`` recognises it as ``what`` (a previous
    output of the command: see _files.claim), atomically. Raises :class:`WriteFailed` naming
    the file when it cannot be written (the environment's status), and a
    :class:`ConfigurationError` when a file there is not to be replaced (the usage status,
    the file untouched)."""
    if path is None:
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise WriteFailed(STANDARD_OUTPUT, exc) from exc
        return
    try:
        if private:
            # O_EXCL also refuses a symbolic link, even one that points nowhere.
            with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600),
                           "wb") as handle:
                handle.write(data)
        else:
            claim(path, ours or (lambda head: False), what or "a file ioa-check wrote",
                  "--output")
            write_file(path, data)
    except FileExistsError as exc:
        raise ConfigurationError(f"{path} exists; it is not overwritten") from exc
    except OSError as exc:
        raise WriteFailed(path, exc) from exc


def say(speaker: str, line: str) -> None:
    """``line`` on standard error after ``speaker`` (``ioa-check trace``): what it names (a
    file as it was given, a message quoting the input) shown, never obeyed by the terminal."""
    from .._visible import visible

    print(visible(f"{speaker}: {line}", surrogates=False), file=sys.stderr)


def unwritable_stdout(exc: OSError) -> ExitStatus:
    """Say on stderr that standard output cannot be written; the environment's status."""
    print(f"ioa-check: {WriteFailed(STANDARD_OUTPUT, exc)}", file=sys.stderr)
    # What is left in its buffer would fail again when the interpreter flushes it at exit.
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return ExitStatus.ENVIRONMENT
