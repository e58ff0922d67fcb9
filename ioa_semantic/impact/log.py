"""The decision log: each decision a Checker makes, as one JSON line, with what judging it
again needs (issue 40, item 1; draft S5).

A line holds the envelope's digest (the envelope itself is kept once, by the sha256 of its
bytes, in the content-addressed folder beside the log, ``LOG.objects``, as are the
registrations and artifacts the Checker was built from), the task parameters given, the
evaluation instant, the decision (verdict and reasons) and its dependencies: what the
decision read. The format is versioned (:data:`FORMAT`) and described in docs/impact.md.

The log rotates by size: when a line would take the current file past ``max_bytes``, the
file becomes ``LOG.N`` (N one more than the highest present) and a new ``LOG`` begins; the
segments read oldest first are ``LOG.1``, ``LOG.2``, ... then ``LOG``. A log that is cut (a
write interrupted) or damaged is read up to the damage in each segment, with a
:class:`Damage` saying where and why; reading never raises for what a line holds.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import stat
import tempfile
import threading
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any, BinaryIO, NamedTuple, cast

from .._checker import Checked, Checker
from .._exceptions import ConfigurationError
from .._files import NotOurs, claim, first_line, writing
from .._findings import Severity, Verdict
from .._instants import instant

#: The line format's name and version; a reader refuses a line of another.
FORMAT = "ioa-decision-log/1"
#: The longest line a reader takes (far over any decision's line: the envelope itself is not
#: in it, only its digest and reasons).
LINE_LIMIT = 256 << 20
#: Rotation size by default (64 MiB; the command line's --log-max-bytes says the same).
MAX_BYTES = 64 << 20
# The reason codes that say a mapping was looked up for a capability and not established:
# the pairs a later artifact could provide (their path is the capability).
_LOOKED_UP = frozenset({"alignment.no-accepted-mapping", "alignment.condition-unevaluable",
                        "alignment.ambiguous", "alignment.not-offered"})
_SEGMENT = re.compile(r"\.(\d+)$")
# How every line begins (json.dumps with the members in the order :meth:`DecisionLog._line`
# gives them): how a file is told to be a decision log before anything is appended to it.
_MARK = b'{"format":"' + FORMAT.encode() + b'"'



def objects_folder(log: str) -> str:
    """The content-addressed folder beside ``log`` (shared by all its segments)."""
    return f"{log}.objects"


def object_path(log: str, digest: str) -> str:
    return os.path.join(objects_folder(log), digest[:2], digest)


class DecisionLog:
    """A :class:`~ioa_semantic.DecisionRecorder` that appends each decision to ``path``.

    Give it to a Checker (``Checker(..., recorder=DecisionLog(path))``); it may be shared
    by threads. Writing failures raise :class:`~ioa_semantic.WriteFailed`.
    """

    def __init__(self, path: str, *, max_bytes: int = MAX_BYTES) -> None:
        if max_bytes <= 0:
            raise ConfigurationError(f"the decision log's rotation size must be positive, not "
                                     f"{max_bytes}")
        # Appending to a file that is not a decision log would corrupt it, and rotating it
        # would rename it: the path is claimed first, as every file ioa-check writes is.
        claim(path, is_decision_log, "a decision log", "decision log", streams=False)
        if os.path.islink(objects_folder(path)):
            raise NotOurs(f"{objects_folder(path)} (the decision log's objects) is a symbolic "
                          "link: never written through; give the log a path of its own")
        self.path = path
        self.max_bytes = max_bytes
        self._lock = threading.Lock()

    def record(self, checker: Checker, checked: Checked) -> None:
        """Append one decision (and keep its envelope in the objects folder)."""
        line = json.dumps(self._line(checker, checked), ensure_ascii=False,
                          separators=(",", ":")).encode("utf-8", "surrogatepass") + b"\n"
        with self._lock, writing(self.path):
            self._append(line)

    def _append(self, line: bytes) -> None:
        """``line`` appended in one write, the file rotated first when it would pass
        ``max_bytes``. The service's worker processes append to one log: each holds the
        file's lock (flock) while it looks at the size, rotates and writes, and one that
        finds the file rotated under it opens the new one."""
        while True:
            # Never through a link (claim refused one; one put there since is not followed).
            handle = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                             | os.O_CLOEXEC, 0o666)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file is closed
                try:
                    current = os.stat(self.path)
                except FileNotFoundError:
                    continue
                if current.st_ino != os.fstat(handle).st_ino:
                    continue  # rotated while this process waited for the lock
                if current.st_size and current.st_size + len(line) > self.max_bytes:
                    os.replace(self.path, f"{self.path}.{_next_segment(self.path)}")
                    continue
                _write(handle, line, current.st_size)
                return
            finally:
                os.close(handle)

    def _line(self, checker: Checker, checked: Checked) -> dict[str, Any]:
        decision = checked.decision
        configuration = self._configuration(checker)
        envelope = self._keep(checked.envelope)
        dependencies = dict(decision.dependencies)
        return {
            "format": FORMAT,
            # Which Checker judged it: its revision memory (5.3) is its own.
            "checker": configuration["checker"],
            "envelope": {"sha256": envelope, "source": decision.source},
            "params": dict(sorted(checked.params.items())),
            "at": decision.at,
            "configuration": {k: v for k, v in configuration.items() if k != "checker"},
            "decision": {"verdict": str(decision.verdict),
                         "reasons": [f.as_dict() for f in decision.findings]},
            "dependencies": {**_thawed(dependencies), "read": reads(decision.findings,
                                                                      dependencies)},
            "instance": ({"pair": checked.instance[0].hex(), "content": checked.instance[1].hex()}
                         if checked.instance is not None else None),
        }

    def _configuration(self, checker: Checker) -> dict[str, Any]:
        # Each Checker's configuration, written once per Checker (its objects stored), is
        # held by the Checker itself (Checker.recorded), never by its id(): a Checker
        # collected leaves its id to the next one made, which would be logged under the
        # first one's configuration.
        with self._lock:
            known = checker.recorded
        if isinstance(known, tuple) and known[0] is self:
            return cast(dict[str, Any], known[1])
        offered = checker.offered
        if offered is None:
            raise ConfigurationError("a decision log needs the Checker built with it "
                                     "(Checker(..., recorder=log))")
        profile = offered.profile
        if os.path.exists(profile):
            profile = os.path.abspath(profile)
        configuration = {
            "profile": {"source": profile,
                        **_thawed(checker.profile_dependencies)},
            "capabilities": [{"origin": origin, "sha256": self._keep(data)}
                             for origin, data in offered.capabilities],
            "alignments": [{"origin": origin, "sha256": self._keep(data),
                            "artifactId": a.id or None, "revision": a.revision or None}
                           for (origin, data), a in zip(offered.alignments, checker.artifacts,
                                                        strict=True)],
            "engine": checker.engine,
            "limits": checker.limits._asdict(),
            "shapeTimeout": checker.shape_timeout,
            # Remote resources are not kept: a decision that could retrieve is not judged
            # again (impact counts it as unjudgeable).
            "retrieval": checker.retrieval_enabled or bool(checker.remote_artifacts),
            "checker": os.urandom(16).hex(),
        }
        with self._lock:
            known = checker.recorded
            if isinstance(known, tuple) and known[0] is self:
                return cast(dict[str, Any], known[1])  # another thread's, first
            checker.recorded = (self, configuration)
        return configuration

    def _keep(self, data: bytes) -> str:
        """``data`` kept under its sha256 in the objects folder; its digest."""
        digest = hashlib.sha256(data).hexdigest()
        target = object_path(self.path, digest)
        if os.path.exists(target):
            return digest
        folder = os.path.dirname(target)
        with writing(target):
            # Each folder made only where it is not a link (one put there since the log was
            # opened is never written through, nor anything made in the folder it names).
            for made in (objects_folder(self.path), folder):
                if os.path.islink(made):
                    raise OSError(errno.ELOOP, "a symbolic link, never written through", made)
                os.makedirs(made, exist_ok=True)
            # Written aside and renamed: a reader never finds half an object under its name.
            handle, temporary = tempfile.mkstemp(dir=folder, prefix=".part-")
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, target)
        return digest


def _write(handle: int, line: bytes, size: int) -> None:
    """``line`` appended to the file open as ``handle``, ``size`` bytes long before it. A write
    that fails half way (a full disk) is cut back off: a torn line would stop a reader there,
    and every decision appended after it would be lost to impact."""
    try:
        view = memoryview(line)
        while view:
            view = view[os.write(handle, view):]
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(handle, size)
        raise


def is_decision_log(head: bytes) -> bool:
    """Whether a file beginning with ``head`` is a decision log: its first line is one of
    :data:`FORMAT` (as :class:`DecisionLog` writes its members, ``format`` first), or the
    start of one that a cut write left torn."""
    line = first_line(head)
    return line.startswith(_MARK) or (b"\n" not in head and _MARK.startswith(line))


def reads(findings: Any, dependencies: Mapping[str, Any]) -> dict[str, Any]:
    """What a decision read beyond its profile, as :mod:`.change` tests it: whether the offered
    artifacts (and the instant, through their validity limits) were read at all, and the
    capabilities a mapping was looked up for and not established.

    Artifacts are screened when the envelope passed the baseline and its ontology version is
    accepted (``readAs``; pipeline.decision.evaluate), whether or not registrations are
    offered (each exclusion is reported); otherwise none of them, nor the instant, can
    change the decision.
    """
    ontology = dependencies.get("ontology") or {}
    if not ontology:
        why = "the envelope was rejected before compatibility was evaluated"
    elif "readAs" not in ontology:
        why = "the envelope's ontology version is not accepted"
    else:
        why = None
    looked_up = sorted({f.path for f in findings if f.code in _LOOKED_UP})
    # Rejected at the baseline: the only way to no ontology but an RDF store that refused a
    # value (jsonld.expansion-error), which came after the artifacts were fetched.
    rejected = not ontology and not any(f.code == "jsonld.expansion-error" for f in findings)
    return {"stage": "baseline" if rejected else "outcome",
            "artifacts": why is None, **({"notReadBecause": why} if why else {}),
            "lookups": [{"capability": c, "source": {"ontologyId": ontology.get("id"),
                                                     "ontologyVersion": ontology.get("readAs")}}
                        for c in looked_up]}


def _thawed(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thawed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_thawed(v) for v in value]
    return value


def _next_segment(path: str) -> int:
    return max((n for _, n in _segments(path)), default=0) + 1


def _segments(path: str) -> list[tuple[str, int]]:
    folder = os.path.dirname(path) or "."
    base = os.path.basename(path)
    found = []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    for name in names:
        if name.startswith(base + "."):
            match = _SEGMENT.search(name[len(base):])
            if match and name[len(base):] == match.group(0):
                found.append((os.path.join(folder, name), int(match.group(1))))
    return sorted(found, key=lambda s: s[1])


class Logged(NamedTuple):
    """One decision read back from a log: where it stands (``log`` segment and 1-based
    ``line``) and the line as written."""

    log: str
    line: int
    entry: dict[str, Any]

    @property
    def verdict(self) -> Verdict:
        return Verdict(self.entry["decision"]["verdict"])

    @property
    def at(self) -> datetime:
        return _instant_of(self.entry["at"])


class Damage(NamedTuple):
    """Where a log stops being readable and why; the lines before it were read."""

    log: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.log}, line {self.line}: {self.reason}; the rest of this file is not read"


def read_log(path: str) -> Iterator[Logged | Damage]:
    """The decisions of the log at ``path``, its rotated segments first, oldest first; a
    :class:`Damage` where a segment stops being readable. A log that cannot be opened at
    all is a :class:`~ioa_semantic.ConfigurationError`."""
    segments = [p for p, _ in _segments(path)]
    if os.path.exists(path) or not segments:
        segments.append(path)
    for number, segment in enumerate(segments):
        try:
            handle = _opened(segment)
        except OSError as exc:
            if number == len(segments) - 1 and segments[:-1] and isinstance(
                    exc, FileNotFoundError):
                continue  # rotated just now, and nothing written since
            raise ConfigurationError(f"{segment}: the decision log cannot be read: "
                                     f"{exc.strerror}") from exc
        with handle:
            yield from _lines(segment, handle)


def _opened(segment: str) -> BinaryIO:
    """``segment`` open for reading, when it is a file: a named pipe under a log's or a
    segment's name would hold the run for good, and a device never ends (opened without
    blocking, to look; the writer refuses both as its path too)."""
    descriptor = os.open(segment, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise OSError(errno.EINVAL, "not a file (a named pipe, a device or a folder)")
    os.set_blocking(descriptor, True)
    return open(descriptor, "rb")


def _lines(segment: str, handle: Any) -> Iterator[Logged | Damage]:
    number = 0
    while raw := handle.readline(LINE_LIMIT + 1):
        number += 1
        if len(raw) > LINE_LIMIT:
            # Read whole, a file of no line ends (not a log, or a damaged one) would be held
            # in memory at once, however large.
            yield Damage(segment, number, f"a line longer than {LINE_LIMIT} bytes")
            return
        if not raw.endswith(b"\n"):
            yield Damage(segment, number, "the file ends inside a line (a write was cut)")
            return
        problem = None
        try:
            entry = json.loads(raw)
        except (ValueError, RecursionError):
            entry, problem = None, "not a JSON line"
        if problem is None:
            problem = _problem(entry)
        if problem is not None:
            yield Damage(segment, number, problem)
            return
        yield Logged(segment, number, entry)


def _problem(entry: Any) -> str | None:
    """Why ``entry`` is not a decision line this reader can use, or None: every member an
    impact run reads is checked here, so that no line read gets as far as a traceback."""
    if not isinstance(entry, dict):
        return "not a JSON object"
    if entry.get("format") != FORMAT:
        return f"not a line of {FORMAT} (format {entry.get('format')!r})"
    try:
        _need(_digest(entry["envelope"]["sha256"]), "envelope.sha256")
        _need(isinstance(entry["envelope"].get("source", "-"), str), "envelope.source")
        _need(isinstance(entry.get("checker", ""), str), "checker")
        _need(isinstance(entry["params"], dict)
              and all(isinstance(v, str) for v in entry["params"].values()), "params")
        _instant_of(entry["at"])
        configuration = entry["configuration"]
        _need(isinstance(configuration["profile"]["source"], str), "configuration.profile")
        for item in (*configuration["capabilities"], *configuration["alignments"]):
            _need(_digest(item["sha256"]), "configuration: an object's sha256")
            _need(isinstance(item["origin"], str)
                  and isinstance(item.get("artifactId"), (str, type(None))),
                  "configuration: an object's origin or artifactId")
        _need(isinstance(configuration.get("engine", ""), str), "configuration.engine")
        # The limits a decision is judged again under: counts, as Limits holds them (a NaN,
        # a string or a list would lift a limit or fail inside the judgement).
        limits = configuration.get("limits", {})
        _need(isinstance(limits, dict) and all(_count(v) for v in limits.values()),
              "configuration.limits")
        timeout = configuration.get("shapeTimeout")
        _need(timeout is None or (isinstance(timeout, (int, float))
                                  and not isinstance(timeout, bool)
                                  and 0 < timeout < float("inf")), "configuration.shapeTimeout")
        Verdict(entry["decision"]["verdict"])
        for reason in entry["decision"]["reasons"]:
            Severity(reason["severity"])
            _need(all(isinstance(reason[k], str) for k in ("code", "path", "section")),
                  "decision.reasons")
        dependencies = entry["dependencies"]
        _need(isinstance(dependencies["read"]["artifacts"], bool), "dependencies.read")
        for artifact in dependencies["artifacts"]:
            for limit in ("validFrom", "validUntil", "proofCreated", "proofExpires"):
                if artifact.get(limit) is not None:
                    _instant_of(artifact[limit])
        instance = entry.get("instance")
        if instance is not None:
            _need(_digest(instance["pair"]) and _digest(instance["content"]), "instance")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return f"a member is missing or of the wrong kind ({type(exc).__name__}: {exc})"
    return None


def _need(condition: bool, member: str) -> None:
    if not condition:
        raise ValueError(f"{member} is not as {FORMAT} writes it")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _digest(value: Any) -> bool:
    return isinstance(value, str) and re.fullmatch("[0-9a-f]{64}", value) is not None


def _instant_of(value: Any) -> datetime:
    """An instant with a UTC offset, as a line writes them (every fraction digit kept), or
    as a line of an earlier ioa-check wrote one it took from a looser --at (an offset with
    seconds): the same format, read as it was then."""
    try:
        return instant(value)
    except (TypeError, ValueError):
        pass
    try:
        earlier = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        earlier = None
    _need(earlier is not None and earlier.utcoffset() is not None, f"the instant {value!r}")
    assert earlier is not None
    return earlier
