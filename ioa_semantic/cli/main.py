"""The ``ioa-check`` command: a thin shell over the library, one parser with a subcommand each.

``check`` (envelopes, the default: ``ioa-check ENVELOPE...`` is ``ioa-check check
ENVELOPE...``), ``audit`` (capability registrations in bulk), ``lint`` (profile and artifact
files), ``trace`` (execution traces), ``sign`` and ``keygen`` (signed artifacts) and ``serve``
(the validation service). Each command's module adds its arguments and runs it; this one
parses, dispatches, and turns what escapes into the contract's exit status: the commands
raise the errors of the library's tree (_exceptions), and :func:`said` is the one place that
says them and maps them to a status.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType
from typing import Any

from .._build import build_kind
from .._exceptions import (
    STANDARD_OUTPUT,
    ClusterStopped,
    ConfigurationError,
    EnvironmentFailure,
    IoaSemanticError,
    WriteFailed,
)
from .._files import remove_aside
from .._nearest import nearest
from .._runtime import own_process, paused, quick_exit, untranslated_argparse
from .._status import ExitStatus
from .._version import __version__
from .parsing import _Parser, say, unwritable_stdout

# The commands, each the module of this package of its name, in the order --help lists them.
# A module is imported when its command is parsed (see command_module), never all at start: a
# check imports nothing of the other commands (serve's alone, with urllib.parse, ipaddress
# and signal, was a tenth of a cold check's imports).
COMMANDS = ("check", "audit", "lint", "trace", "sign", "keygen", "serve", "impact")
_SUMMARIES = {
    "check": "judge envelopes (the default command: ioa-check ENVELOPE... --profile NAME)",
    "audit": "audit capability registrations in bulk",
    "lint": "validate profile and alignment artifact files",
    "trace": "audit execution traces against what agents declare",
    "sign": "sign an alignment artifact with an Ed25519 key (a Data Integrity proof)",
    "keygen": "make an Ed25519 signing key and print its did:key",
    "serve": "serve checks and audits over HTTP, with a page for people (the serve extra)",
    "impact": "which logged decisions a new profile, artifact or instant would flip",
}
# What the top-level parser answers itself; anything else not naming a command is check's.
_TOP_LEVEL = ("-h", "--help", "--version")


class _Version(argparse.Action):
    """``--version``: the release and which build answers (ioa_semantic._build), the build
    found only when asked."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        sys.stdout.write(f"ioa-check {__version__} ({build_kind()})\n")
        parser.exit()


def command_module(name: str) -> ModuleType:
    """The module of the command ``name`` (one of :data:`COMMANDS`), imported now if it was
    not yet."""
    # Its imports (check's: the whole Checker) allocate what lives as long as the process:
    # see _runtime. Each is spelled out, so that the package's import graph reads it
    # (tests/test_layers.py), as a name made at run time would not be.
    with paused(settle=True):
        if name == "check":
            from . import check
            return check
        if name == "audit":
            from . import audit
            return audit
        if name == "lint":
            from . import lint
            return lint
        if name == "trace":
            from . import trace
            return trace
        if name == "sign":
            from . import sign
            return sign
        if name == "keygen":
            from . import keygen
            return keygen
        if name == "serve":
            from . import serve
            return serve
        if name == "impact":
            from . import impact
            return impact
    raise ValueError(f"no command {name!r}")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line's parser; with ``command``, one that knows only that command,
    which is all that parsing a command line needs (building the others' options would be
    most of a cold check's parsing, for nothing, and importing their modules more)."""
    check = command_module("check")  # the top level's description and epilog are check's
    parser = _Parser(prog="ioa-check", description=check.DESCRIPTION,
                     epilog="ioa-check COMMAND --help describes each command. Without a "
                            "COMMAND, the words are check's: ioa-check ENVELOPE... --profile "
                            "NAME|PATH, or ioa-check --list for the shipped profiles and "
                            "alignment artifacts (ioa-check check --help has every option). "
                            + check.EPILOG)
    parser.add_argument("--version", action=_Version, nargs=0, default=argparse.SUPPRESS,
                        help="show the version and the build (compiled or pure), then exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        if command is not None and name != command:
            continue
        module = command_module(name)
        # check is also what ioa-check runs without a command; its usage names it all the
        # same, as the command whose options the line is read by.
        sub = commands.add_parser(name, help=_SUMMARIES[name], description=module.DESCRIPTION,
                                  epilog=module.EPILOG, prog=f"ioa-check {name}")
        module.add_arguments(sub)
        sub.set_defaults(run=module.run, parser=sub)
    return parser


def run(argv: Sequence[str]) -> int:
    """One command line, parsed and run; the exit status."""
    argv = list(argv)
    if argv[:1] == ["trace"]:
        # trace's own subcommands, whose modules only a trace command line imports.
        from . import trace_history, trace_serve

        if trace_history.wants(argv[1:]):
            return trace_history.run(argv[1:])  # trace query, trace reaudit: a store's history
        if trace_serve.wants(argv[1:]):
            return trace_serve.run(argv[1:])  # trace serve: OTLP/HTTP ingestion
        if len(argv) > 1:
            _refuse_mistyped(argv[1], (*trace_history.SUBCOMMANDS, "serve"), "trace")
    if not argv or (argv[0] not in COMMANDS and argv[0] not in _TOP_LEVEL):
        _refuse_mistyped(argv[0] if argv else "", COMMANDS, None)
        argv.insert(0, "check")
    opts = build_parser(argv[0] if argv[0] in COMMANDS else None).parse_args(argv)
    runner: Callable[[argparse.Namespace, argparse.ArgumentParser], int] = opts.run
    return runner(opts, opts.parser)


def _refuse_mistyped(word: str, commands: Iterable[str], within: str | None) -> None:
    """A usage error when ``word`` looks like a mistyped command (of ``within``'s
    subcommands, or the top level's): a bare word that names no file but resembles a command.
    Anything else stays the envelope (or trace) it is taken for, as before: a path, a file
    that exists, an option, or a word like no command."""
    if (not word or word.startswith("-") or "/" in word or os.sep in word or "." in word
            or os.path.lexists(word)):
        return
    close = nearest(word, commands)
    if close is None:
        return
    parser = build_parser(within)
    if within is not None:  # the usage of the command whose subcommand was mistyped
        (subcommands,) = [action for action in parser._actions
                          if isinstance(action, argparse._SubParsersAction)]
        parser = subcommands.choices[within]
    what = f"a subcommand of {within}" if within else "a command"
    parser.error(f"{word!r} is neither {what} nor a file (did you mean {close!r}?)")


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM (``timeout``, a CI job cancelled, ``systemctl stop``): what the command was
    writing aside is removed, and the process ends at once with the status a shell reports
    for it. Not an exception raised where the command stands: one raised inside an
    extension's import (orjson's, on first use) ended the interpreter with SIGSEGV. What it
    ends without (a state, a journal) is made to survive a kill."""
    remove_aside()
    os._exit(143)


def main(argv: Sequence[str] | None = None) -> int:
    _undecodable_as_escapes()
    argv = sys.argv[1:] if argv is None else argv
    stdout = sys.stdout
    sys.stdout = _Written(stdout)
    # _signal, not signal: the module's enumerations cost a cold check a millisecond. Not
    # for the services, which install handlers of their own (a trace store, fed or asked,
    # is made to survive the immediate end this handler makes).
    import _signal

    before = None
    if _command(argv) not in ("serve", "trace serve"):
        try:
            before = _signal.signal(_signal.SIGTERM, _terminated)
        except ValueError:  # not the main thread (a library caller's): left as it is
            before = None
    try:
        return _main(argv)
    finally:
        sys.stdout = stdout
        if before is not None:
            _signal.signal(_signal.SIGTERM, before)


def _main(argv: Sequence[str]) -> int:
    try:
        return run(argv)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``| head``): nothing is wrong with the input or the tool.
        # Python would still complain while flushing stdout at exit, so point it at devnull.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # what a shell reports for a process ended by SIGPIPE
    except IoaSemanticError as exc:
        status = said(exc, _command(argv))
        if status is not None:
            return status
        return _internal_error()
    except Exception:  # a bug: say so, and put no verdict on stdout
        return _internal_error()


def _command(argv: Sequence[str]) -> str:
    """The command a command line runs, as its errors name it (``trace query``, ``check``)."""
    if argv[:1] == ["trace"] and len(argv) > 1 and argv[1] in ("query", "reaudit", "serve"):
        return f"trace {argv[1]}"
    return argv[0] if argv and argv[0] in COMMANDS else "check"


# The contract's exit status (section 2, "Exit status") of each error of the tool that a
# command lets escape, the first that matches: any other that escapes is a bug.
STATUS_OF_ERROR: tuple[tuple[type[IoaSemanticError], ExitStatus], ...] = (
    (ConfigurationError, ExitStatus.USAGE),  # a bad profile, a file that is not ours, ...
    (EnvironmentFailure, ExitStatus.ENVIRONMENT),  # a full disk, a port taken
    (ClusterStopped, ExitStatus.INTERNAL),  # no verdict, and no bug either: no trace
)
# The commands that name themselves on standard error; the others say "ioa-check".
_SPEAKERS = {"lint": "ioa-check lint", "impact": "ioa-check impact", "sign": "ioa-check sign",
             "keygen": "ioa-check keygen",
             "trace": "ioa-check trace", "trace query": "ioa-check trace query",
             "trace reaudit": "ioa-check trace reaudit", "trace serve": "ioa-check trace serve"}


def said(exc: IoaSemanticError, command: str) -> ExitStatus | None:
    """``exc`` said on standard error, one line naming what failed, as ``command`` says it;
    its exit status. None for an error the command line does not expect (a bug)."""
    status = next((status for kind, status in STATUS_OF_ERROR if isinstance(exc, kind)), None)
    if status is None:
        return None
    if isinstance(exc, WriteFailed) and exc.name == STANDARD_OUTPUT:
        # Whichever command it was, and with what is left in stdout's buffer sent nowhere.
        return unwritable_stdout(exc.error)
    # An error names what failed (a file, a profile's term) as it was given: what a terminal
    # would obey in it is shown, never sent.
    say(_SPEAKERS.get(command, "ioa-check"), str(exc))
    return status


def _internal_error() -> ExitStatus:
    print("ioa-check: internal error (a bug; please report it with this trace):",
          file=sys.stderr)
    import traceback

    traceback.print_exc(file=sys.stderr)
    return ExitStatus.INTERNAL


# Characters a write of standard output takes at a time: at most 8 KiB of UTF-8, the
# stream's buffer, which writes all it holds or raises.
_PIECE = 2048


class _Written:
    """Standard output as every command writes it: an OSError writing it (a full disk, a
    descriptor the process was started without) is :class:`WriteFailed` naming it, exit 74,
    for every command at this one place; a reader gone away stays BrokenPipeError (141).
    Anything else is the stream's own."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            if len(text) <= _PIECE:
                return int(self._stream.write(text))
            # A large text in pieces the stream's buffer takes whole: written at once, the
            # part a pipe or a file size limit takes was counted as the whole, and the rest
            # left unsaid (an HTML report cut short under the verdict's exit status).
            for start in range(0, len(text), _PIECE):
                self._stream.write(text[start:start + _PIECE])
            return len(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise WriteFailed(STANDARD_OUTPUT, exc) from exc

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise WriteFailed(STANDARD_OUTPUT, exc) from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Closed(io.TextIOBase):
    """A standard stream the process was started without (``>&-``; Python makes it None):
    writing to it fails as writing to a closed descriptor does, so that a command that has
    something to write says it cannot (exit 74), as for a full disk, never a traceback."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    @property
    def buffer(self) -> _Closed:
        """Its bytes (``sign``'s and ``keygen``'s output), which fail alike."""
        return self


class _Discarded(io.TextIOBase):
    """A standard error the process was started without: what would be said goes nowhere,
    and the command's exit status, which says it, stays its own."""

    def write(self, text: str) -> int:
        return len(text)


def _undecodable_as_escapes() -> None:
    """What the command writes is UTF-8: a byte of a file name that is not UTF-8 (a lone
    surrogate, PEP 383) is written as the text ``\\udcXX``, never as that byte, on standard
    output and standard error (the JSON reporters escape it the same way in their own
    text)."""
    if sys.stdout is None:
        sys.stdout = _Closed()
    if sys.stderr is None:
        sys.stderr = _Discarded()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]


def entry() -> None:
    """The ``ioa-check`` command: :func:`main`, then a quick exit after a plain check.

    A check holds nothing that needs releasing once its output is written, and tearing the
    interpreter down (every module, the profile's store) costs a one-envelope run more
    than anything else it does after its output (see _runtime), so the process ends as
    soon as its output is flushed. The subcommands (audit with its workers, lint, trace)
    exit the usual way.
    """
    argv = sys.argv[1:]
    untranslated_argparse()
    if argv and argv[0] in COMMANDS and argv[0] != "check":
        sys.exit(main(argv))
    # What the check imports and builds lives until the quick exit: see _runtime.paused.
    own_process()
    quick_exit(main(argv), unwritable_stdout)

