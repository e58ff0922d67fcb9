"""A mas-lab run folder's ``run.json``: what the run says of itself.

mas-lab's trajectory schema documents ``run.json`` as one JSON object written once at the end
of the run. Of its members the trace stage reads only those that describe the session:

* ``run_id``: the run's id, which every event repeats as its own ``run_id``;
* ``mas_id``: the MAS the run executes (``mas.yaml``'s ``id``);
* ``scenario``, ``status`` (``success``, ``error`` or ``timeout``), ``created_at`` (ISO-8601,
  UTC) and ``duration_secs`` (wall-clock seconds): the session's own facts, for the graph.

``run_hash``, the run id of the older ``run.json`` mas-lab's golden fixtures carry, is read
too. Nothing else is: ``folder`` is a path on the machine that ran it, ``prompt`` the user's
free text, ``env``, ``mas_yaml``, ``overlay_path``, ``flavour`` and ``verbosity`` describe the
runtime, not the run, and none of them may reach a report, a graph or the store.

A file that is not one strict JSON object, or a member of the wrong type, is a reason
(``trace.run-malformed``): what is wrong is not used, the rest is. Whether its ``run_id`` is the
events' is for the caller to check (``trace.run-mismatch``).
"""

from __future__ import annotations

import errno
import os
import stat
from decimal import Decimal, InvalidOperation
from typing import Any, NamedTuple

from .._codes import finding
from .._findings import Finding, Severity
from .._instants import instant
from ..pipeline.intake import Limits
from ..pipeline.intake import parse as parse_json
from .privacy import Disclosure

NAME = "run.json"
STATUSES = ("success", "error", "timeout")
_MAX_BYTES = 16 << 20  # the environment snapshot may list many packages; nothing else is big
_EPOCH = instant("1970-01-01T00:00:00Z")


class RunFile(NamedTuple):
    run_id: str | None = None
    run_hash: str | None = None
    mas_id: str | None = None
    scenario: str | None = None
    status: str | None = None
    created_at: str | None = None  # Unix seconds, in plain decimal notation
    duration_secs: str | None = None  # seconds, in plain decimal notation
    findings: tuple[Finding, ...] = ()


def read(folder: str, disclose: Disclosure) -> RunFile:
    """The ``run.json`` of a run folder; an empty :class:`RunFile` when there is none."""
    path = os.path.join(folder, NAME)
    shown = disclose.path(path)
    try:
        data = read_bytes(path)
    except FileNotFoundError:
        return RunFile()
    except OSError as exc:
        return RunFile(findings=(_malformed(shown, "", f"cannot be read: {exc.strerror}; "
                                                       "nothing of it is used"),))
    # Nesting is bounded by the parser's recursion limit only, as the events' payloads are.
    intake = parse_json(data, Limits(_MAX_BYTES, 1 << 62))
    if not intake.ok:
        return RunFile(findings=(_malformed(
            shown, "", f"{intake.findings[0].message}; nothing of it is used"),))
    document: dict[str, Any] = intake.document
    problems: list[Finding] = []
    fields: dict[str, str | None] = {}
    for member, read_member in _MEMBERS.items():
        if member not in document or document[member] is None:
            continue
        value, wrong = read_member(document[member])
        if wrong:
            problems.append(_malformed(shown, member, f"{member} is {wrong}; it is not used"))
        fields[member] = value
    return RunFile(**fields, findings=tuple(problems))


def read_bytes(path: str) -> bytes:
    """A run folder's small file, at most ``_MAX_BYTES + 1`` bytes of it.

    Opened without blocking and read only if it is a regular file: a run folder is the
    user's (or a downloaded archive's), and a named pipe in it would block the audit forever
    (``OSError`` "not a regular file", as one that cannot be read).
    """
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return handle.read(_MAX_BYTES + 1)


def read_object(path: str) -> dict[str, Any]:
    """A run folder's JSON object beside its events (``run_info.json``), or ``{}`` when there
    is none, it cannot be read or it is no strict JSON object: it only names the MAS, after
    ``run.json``, which the schema documents."""
    try:
        data = read_bytes(path)
    except OSError:
        return {}
    intake = parse_json(data, Limits(_MAX_BYTES, 1 << 62))
    return intake.document if intake.ok and isinstance(intake.document, dict) else {}


def mismatch(run_file: RunFile, events_run_id: str, folder: str,
             disclose: Disclosure) -> RunFile:
    """``run_file`` unused when its ``run_id`` is not the events' (another run's file)."""
    shown = disclose.path(os.path.join(folder, NAME))
    assert run_file.run_id is not None
    return RunFile(findings=(*run_file.findings, finding(
        "trace.run-mismatch",
        f"{shown}: its run_id {disclose.run(run_file.run_id)} is not the run_id "
        f"{disclose.run(events_run_id)} of the events: it describes another run, and nothing "
        "of it is used", f"{shown}#/run_id", severity=Severity.WARNING),))


def _malformed(shown: str, member: str, detail: str) -> Finding:
    return finding("trace.run-malformed", f"{shown}: {detail}",
                   f"{shown}#/{member}" if member else shown, severity=Severity.WARNING)


def _name(value: Any) -> tuple[str | None, str | None]:
    if isinstance(value, str) and value.strip():
        return value, None
    return None, "not a non-empty string"


def _status(value: Any) -> tuple[str | None, str | None]:
    if value in STATUSES:
        return value, None
    return None, f"not one of {', '.join(STATUSES)}"


def _created_at(value: Any) -> tuple[str | None, str | None]:
    """An ISO-8601 timestamp (a date and a time: a date alone is no instant) as Unix seconds,
    every fraction digit kept; "T" or a space between them. The schema writes it in UTC;
    one without an offset is read as UTC, which is what the schema says the member holds."""
    if not isinstance(value, str):
        return None, "not an ISO-8601 timestamp"
    if value[10:11] == " ":  # RFC 3339's readable form (str of a Python datetime)
        value = f"{value[:10]}T{value[11:]}"
    try:
        moment = instant(value, utc_unless_offset=True)
    except ValueError:
        return None, "not an ISO-8601 timestamp (a date, T, a time to the second)"
    elapsed = moment - _EPOCH
    seconds = Decimal(elapsed.days * 86400 + elapsed.seconds) + Decimal(
        f"0.{elapsed.microseconds:06d}{moment.beyond}")
    return format(seconds.normalize() if seconds == seconds.to_integral() else seconds, "f"), None


def _duration(value: Any) -> tuple[str | None, str | None]:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, "not a number of seconds"
    try:
        seconds = Decimal(repr(value) if isinstance(value, float) else str(value))
    except InvalidOperation:
        return None, "not a number of seconds"
    if not seconds.is_finite() or seconds < 0 or seconds.adjusted() > 30:
        return None, "not a number of seconds"
    return format(seconds, "f"), None


_MEMBERS = {"run_id": _name, "run_hash": _name, "mas_id": _name, "scenario": _name,
            "status": _status, "created_at": _created_at, "duration_secs": _duration}
