"""The durable cursor of a resumable audit (``--state``): what was read, judged and written,
proven again on a resume, or refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    pass

from .._exceptions import ConfigurationError, WriteFailed
from .._files import (
    HEAD_BYTES,
    NotOurs,
    Unreadable,
    claim,
    first_line,
    read_bounded,
    write_file,
    writing,
)
from . import inputs
from .conflicts import Digested
from .inputs import FileRead, Fingerprint, Mark, Piece


class Tally(Protocol):
    """What a checkpoint records of an audit and restores into it (an :class:`.run.Audit`)."""

    total: int
    statuses: dict[str, int]
    codes: dict[str, int]

    def indexed(self, ident: str, declaration: tuple[Any, ...],
                where: tuple[str, int | None]) -> None: ...


class Refused(ConfigurationError):
    """A state that is not resumed (exit status 2): unreadable, corrupt, of another version, or
    written for files that are no longer as it records them. Nothing has been written."""


class Output:
    """The audit's output stream, whose failures to write are :class:`WriteFailed` naming
    it (``name``); everything else is the stream's own."""

    def __init__(self, stream: IO[str], name: str) -> None:
        self.stream = stream
        self.name = name

    def write(self, text: str) -> int:
        with writing(self.name):
            return self.stream.write(text)

    def flush(self) -> None:
        with writing(self.name):
            self.stream.flush()

    def close(self) -> None:
        with writing(self.name):
            self.stream.close()

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.stream, attribute)


class _Written:
    """A file's length and sha256 so far, kept up as it is written."""

    def __init__(self, length: int = 0, digest: Any = None) -> None:
        self.length = length
        self.hash = digest if digest is not None else hashlib.sha256()

    def add(self, data: bytes) -> None:
        self.length += len(data)
        self.hash.update(data)

    def as_dict(self) -> dict[str, Any]:
        return {"length": self.length, "sha256": self.hash.hexdigest()}


# The state's and the journal's format. 3: a declaration's ontology holds its ids and its
# versions apart (a journal of 2 would compare its declarations with another shape's).
STATE_VERSION = 3
# The largest state read: its places, counts and digests, a few kilobytes (16 MiB, as a
# configuration file).
STATE_BYTES = 16 << 20


_READ_BYTES = 1 << 20  # what proving a written file reads at a time


class Checkpoint:
    """``--state``: resume an audit after the process was killed, losing nothing, and never
    from files that are not as the state records them.

    After every piece of the input (see :func:`pieces`) the output is flushed and synced, the
    conflict index's new entries and the input files read to their end are appended to a
    journal beside the state file and synced, and the state replaces the previous one
    atomically. The state holds how many pieces are done, the counters, and fingerprints:
    the output's and the journal's length and the sha256 of what was written of them so far
    (kept up as they are written), the number of input files finished (each in the journal
    with its path, length and sha256) and the one being read (its path, the bytes of it cut
    into pieces so far and their sha256), hashed as :class:`Fingerprint` reads them.

    A rerun proves the output and the journal (each at least as long as recorded, the recorded
    prefix hashing the same), reads the pieces already done again as the first run read them,
    proving every input file on the way, and only then truncates the output and the journal
    to the last state, replays the journal and goes on: the final output equals that of an
    uninterrupted run over the inputs as they are now, nothing missing, nothing twice. Any
    difference refuses the resume (:class:`Refused`) before anything is written.
    """

    def __init__(self, path: str, inputs: list[str], output: IO[str],
                 is_output: Callable[[bytes], bool] = lambda head: True) -> None:
        self.path = path
        # Whether a file's beginning is one the run writes (an audit report): what a resume
        # holds an output whose recorded prefix is empty to (see _prove).
        self.is_output = is_output
        self.journal_path = path + ".index"
        self.inputs = inputs
        self.output = output
        self.output_name = str(getattr(output, "name", "the output"))
        self.fingerprint = Fingerprint()  # pieces() hashes the inputs into it
        self.done = 0
        self._journal: IO[bytes] | None = None
        self._unjournaled: list[tuple[str, Any, tuple[str, int | None]]] = []
        self._marks: deque[Mark] = deque()  # of the pieces cut and not yet checkpointed
        self._written = _Written()  # the output's
        self._journaled = _Written()
        self._files = 0  # input files in the journal
        self._resumed: dict[str, Any] | None = None  # a state whose inputs are still to prove

    # -- resuming

    def resume(self, audit: Tally) -> int:
        """Restore an interrupted run into ``audit``, once the output and the journal are
        proven to be as the state records them; the number of pieces already done. The inputs
        are proven as :meth:`remaining` reads them again. Raises :class:`Refused`."""
        state = self._load()
        if state is None:
            self._start()
            return 0
        self._written = self._prove(self.output_name, self.output.fileno(), state["output"],
                                    self.is_output)
        name = f"{self.journal_path} (the journal of {self.path})"
        try:
            journal = self._journal_file(os.O_RDONLY, "rb")
        except FileNotFoundError:
            raise self._refused(f"{name} is missing") from None
        except OSError as exc:
            raise self._refused(f"{name} cannot be read: {exc.strerror}") from None
        with journal:
            self._journaled = self._prove(name, journal.fileno(), state["journal"], is_journal)
        audit.total = state["total"]
        audit.statuses = dict(state["statuses"])
        audit.codes = dict(state["codes"])
        self.done = state["pieces"]
        self._files = state["files"]
        self._resumed = state
        return self.done

    def remaining(self, pieces: Iterable[Piece], audit: Tally) -> Iterator[Piece]:
        """The pieces still to judge, each marked for its checkpoint. On a resume, the pieces
        already done are read again (as they were cut, with ``fingerprint=``
        :attr:`fingerprint`), every input file proven as the state records it and the journal
        replayed into ``audit`` before the first piece is handed on."""
        found = iter(pieces)
        if self._resumed is not None:
            self._pass_over(found, audit, self._resumed)
            self._resumed = None
        for piece in found:
            self._marks.append(self.fingerprint.mark())
            yield piece

    def _pass_over(self, found: Iterator[Piece], audit: Tally, state: dict[str, Any]) -> None:
        files = self._replayed(audit, state["journal"]["length"])
        reading = None if state["reading"] is None else tuple(state["reading"])

        def check(record: FileRead) -> None:  # each input file read to its end, in order
            wanted = next(files, None)
            if wanted is None:  # the state had read this one only so far
                raise self._refused(_difference(reading, record))
            if tuple(wanted) != record:
                raise self._refused(_difference(wanted, record))

        fingerprint = self.fingerprint
        fingerprint.check = check
        try:
            passed = 0
            while passed < self.done and next(found, None) is not None:
                passed += 1
            mark = fingerprint.mark()
        finally:
            fingerprint.check = None
        left = next(files, None)  # also the end of the replay
        if left is not None:
            raise self._refused(_difference(left, mark.record()))
        if mark.record() != reading:
            raise self._refused(_difference(reading, mark.record()))
        if passed < self.done:
            raise self._refused(f"the inputs end before the {self.done} pieces already audited")
        # Proven: the output and the journal go back to the state, where the run goes on.
        with writing(self.output_name):
            self.output.flush()
            os.ftruncate(self.output.fileno(), self._written.length)
            self.output.seek(0, os.SEEK_END)
        with writing(self.journal_path):
            self._journal = self._journal_file(os.O_RDWR, "r+b")
            self._journal.truncate(self._journaled.length)
            self._journal.seek(0, os.SEEK_END)
        unsaved = fingerprint.unsaved
        while unsaved and unsaved[0][0] < self._files:  # in the journal already
            unsaved.popleft()

    def _replayed(self, audit: Tally, length: int) -> Iterator[FileRead]:
        """The journal's first ``length`` bytes (proven): the conflict index's entries replayed
        into ``audit``, the input files' yielded in the order they were read."""
        import json

        with self._journal_file(os.O_RDONLY, "rb") as journal:
            read = 0
            for number, entry in enumerate(journal, 1):
                read += len(entry)
                if read > length:
                    break
                # Proven by its hash, but a hash the state records can be made again: an entry
                # of another form is refused here, never replayed (it would fail, or index a
                # declaration no registration can make, only when the conflicts are reported).
                try:
                    value = json.loads(entry)
                except (ValueError, RecursionError):  # RecursionError: nested past the parser
                    value = None
                if _file_entry(value):
                    yield value["file"], value["length"], value["sha256"]
                elif _index_entry(value):
                    ident, declaration, source, index = value
                    audit.indexed(ident, _frozen(declaration), (source, index))
                else:
                    raise self._refused(f"line {number} of its journal {self.journal_path} is "
                                        "not an entry the audit writes")

    def _journal_file(self, flags: int, mode: str) -> IO[bytes]:
        """The journal, opened never through a link (a link at its path is refused:
        :class:`Refused`); what it holds is proven by :meth:`_prove`."""
        try:
            # Without blocking: a named pipe put at its path would wait for a writer forever.
            descriptor = os.open(self.journal_path, flags | os.O_NOFOLLOW | os.O_NONBLOCK
                                 | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            if os.path.islink(self.journal_path):
                raise self._refused(f"{self.journal_path} (the journal of {self.path}) is a "
                                    "symbolic link, never followed") from None
            raise exc
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            os.close(descriptor)
            raise self._refused(f"{self.journal_path} (the journal of {self.path}) is not a "
                                "regular file", ours=False)
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, mode)

    def _prove(self, name: str, descriptor: int, recorded: dict[str, Any],
               ours: Callable[[bytes], bool]) -> _Written:
        """A written file (``descriptor``) as long as recorded at least, and its recorded
        prefix hashing the same: that prefix's running hash. A recorded prefix that is empty
        proves nothing: the file must then begin as the run writes it (``ours``), for a file
        put in its place (which may even have its inode) to be refused, not cut back."""
        length, size = recorded["length"], os.fstat(descriptor).st_size
        if size < length:
            raise self._refused(f"{name} is {size} bytes, shorter than the {length} already "
                                "written (deleted or truncated since)")
        if not length and size and not ours(os.pread(descriptor, HEAD_BYTES, 0)):
            raise self._refused(f"{name} holds what its run did not write (replaced since)")
        digest, position = hashlib.sha256(), 0
        while position < length:
            data = os.pread(descriptor, min(_READ_BYTES, length - position), position)
            if not data:
                break
            digest.update(data)
            position += len(data)
        if digest.hexdigest() != recorded["sha256"]:
            raise self._refused(f"{name}: its first {length} bytes are not those written "
                                "(changed or replaced since)")
        return _Written(length, digest)

    def _load(self) -> dict[str, Any] | None:
        import json

        if not os.path.lexists(self.path):
            return None
        try:
            # Bounded, and only a regular file (a named pipe or a device is never waited
            # on): a state is a few kilobytes of places and counts.
            data = read_bounded(self.path, STATE_BYTES, "for an audit's state")
        except Unreadable as exc:
            raise self._refused(f"it {exc}", ours=False) from None
        try:
            state = json.loads(data)
        except ValueError:
            raise self._refused("it is not JSON", ours=None) from None
        except RecursionError:  # json reads nesting by recursion
            raise self._refused("it nests too deeply to be a state", ours=False) from None
        # A state of any version records its inputs and its counts by status: a JSON object
        # without both is something else of the user's (a registration has inputs, a
        # package.json a version).
        if not isinstance(state, dict):
            raise self._refused("it is not an audit's state (not a JSON object)", ours=None)
        if not {"inputs", "statuses"} <= state.keys():
            raise self._refused("it is not an audit's state", ours=False)
        if state.get("version") != STATE_VERSION or state.get(
                "cut") != [inputs._BLOCK_BYTES, inputs._BATCH]:
            raise self._refused("it was written by another version of ioa-check")
        missing = _state_problem(state)
        if missing:
            raise self._refused(f"it lacks {missing}")
        if state.pop("check") != _seal(state):
            raise self._refused("it is corrupt (its content does not match its checksum)")
        if state["inputs"] != self.inputs:
            raise self._refused("it was written for other inputs: "
                                + " ".join(state["inputs"]))
        return state

    def _refused(self, detail: str, ours: bool | None = True) -> Refused:
        """The resume refused; ``ours`` False for a file that is no state of an audit's, which
        may be anything of the user's (never to be deleted on the tool's advice), None for
        one that may be either (not JSON: a state cut short, or another file)."""
        if ours is False:
            return Refused(f"cannot resume from {self.path}: {detail}; give --state a path "
                           "of its own (a state the audit writes, or none yet)")
        if ours is None:
            return Refused(f"cannot resume from {self.path}: {detail}; if it is this audit's "
                           f"state, delete {self.path} to start the audit over, else give "
                           "--state a path of its own")
        return Refused(f"cannot resume from {self.path}: {detail}; delete {self.path} to start "
                       "the audit over")

    def _start(self) -> None:
        """A run from the start: the output emptied, a new journal, and the state's folder
        known to take files before anything is judged. A journal path holding a file that
        is not a journal is refused first (see _files.claim)."""
        try:
            claim(self.journal_path, is_journal, f"the journal of an audit state ({self.path})",
                  "--state", streams=False)
        except NotOurs as exc:
            raise Refused(str(exc)) from None
        with writing(self.output_name):
            self.output.flush()
            os.ftruncate(self.output.fileno(), 0)
            self.output.seek(0)
        with writing(self.path):
            # A name of its own: a fixed one (state.tmp) could be a file of the user's.
            descriptor, temporary = tempfile.mkstemp(dir=os.path.dirname(self.path) or ".")
            os.close(descriptor)
            os.remove(temporary)
        with writing(self.journal_path):
            self._journal = open(self.journal_path, "wb")  # noqa: SIM115 (closed by finish)

    # -- checkpoints

    def indexed(self, ident: str, declaration: Any, where: tuple[str, int | None]) -> None:
        self._unjournaled.append((ident, declaration, where))

    def indexed_all(self, entries: Iterable[Digested],
                    declared: dict[bytes, tuple[Any, ...]]) -> None:
        self._unjournaled.extend((ident, declared[digest], where)
                                 for ident, _, digest, where in entries)

    def advance(self, audit: Tally) -> None:
        self.done += 1
        self.save(audit, self._marks.popleft())

    def save(self, audit: Tally, mark: Mark) -> None:
        """A checkpoint after the piece cut at ``mark``: the journal and the output synced, then
        the state replaced. A write that fails (:class:`WriteFailed`) leaves the last state,
        from which a rerun resumes."""
        import json

        assert self._journal is not None
        lines = [json.dumps([ident, declaration, source, index]) + "\n"
                 for ident, declaration, (source, index) in self._unjournaled]
        self._unjournaled.clear()
        unsaved = self.fingerprint.unsaved
        while unsaved and unsaved[0][0] < mark.finished:
            path, length, digest = unsaved.popleft()[1]
            lines.append(json.dumps({"file": path, "length": length, "sha256": digest}) + "\n")
        data = "".join(lines).encode()
        with writing(self.journal_path):
            self._journal.write(data)
            self._journal.flush()
            os.fsync(self._journal.fileno())
        self._journaled.add(data)
        self._files = mark.finished
        with writing(self.output_name):
            self.output.flush()
            end, descriptor = self.output.tell(), self.output.fileno()
            os.fsync(descriptor)
            while self._written.length < end:  # what was written since, hashed from the file
                written = os.pread(descriptor, min(_READ_BYTES, end - self._written.length),
                                   self._written.length)
                if not written:
                    break
                self._written.add(written)
        reading = mark.record()
        state: dict[str, Any] = {
            "version": STATE_VERSION, "cut": [inputs._BLOCK_BYTES, inputs._BATCH], "inputs": self.inputs,
            "pieces": self.done, "output": self._written.as_dict(),
            "journal": self._journaled.as_dict(), "files": self._files,
            "reading": None if reading is None else list(reading), "total": audit.total,
            "statuses": audit.statuses, "codes": audit.codes}
        state["check"] = _seal(state)
        try:
            # Replaced atomically; what a failed write took of a full disk is freed.
            write_file(self.path, json.dumps(state).encode())
        except OSError as exc:
            raise WriteFailed(self.path, exc) from exc

    def close(self) -> None:
        """The journal closed (the run is over, or has failed)."""
        if self._journal is not None:
            self._journal.close()

    def finish(self) -> None:
        """The audit is complete and its output synced: the state and its journal are no
        longer needed."""
        with writing(self.output_name):
            self.output.flush()
            os.fsync(self.output.fileno())
        self.close()
        for path in (self.path, self.journal_path):
            with writing(path), contextlib.suppress(FileNotFoundError):
                os.remove(path)


def is_journal(head: bytes) -> bool:
    """Whether a file beginning with ``head`` is a state's journal: its first line an index
    entry (an array of four) or an input file read (an object naming it); a torn first line
    is the start of either. A line is told by its whole form (a user's JSON Lines of objects
    with a "file" member, or an array of four, are not a journal); only a line that does not
    parse, alone in the file, is a torn one."""
    import json

    line = first_line(head)
    try:
        value = json.loads(line)
    except RecursionError:  # nested past what json reads: no line the journal writes
        return False
    except ValueError:
        return b"\n" not in head and line.startswith((b'["', b'{"file": "'))
    # An input file read (one that could not be read has no length and no digest), or an
    # index entry: each as the replay reads it.
    return _file_entry(value) or _index_entry(value)


def _difference(wanted: FileRead | tuple[Any, ...] | None, found: FileRead | None) -> str:
    """How an input file read again differs from the state's record of it (``wanted``)."""
    if wanted is None:
        return f"{found[0] if found else 'an input'}: read where the state records no file"
    path, length = wanted[0], wanted[1]
    if found is None:
        return f"{path}: no longer among the inputs where it was audited"
    if found[0] != path:
        return f"{path}: no longer where it was among the inputs ({found[0]} is there now)"
    if length is None:
        return f"{path}: could not be read when it was audited, and now can"
    if found[1] is None:
        return f"{path}: cannot be read now"
    try:
        size = os.stat(path).st_size
    except OSError:
        size = None
    if size is not None and size < length:
        return f"{path}: now {size} bytes, shorter than the {length} already audited"
    return f"{path}: changed where it was already audited (its first {length} bytes)"


def _seal(state: dict[str, Any]) -> str:
    """The checksum a state carries of the rest of itself."""
    import json

    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()


def _state_problem(state: dict[str, Any]) -> str | None:
    """The first field a state lacks (or holds of the wrong type), or None."""
    def written(value: Any) -> bool:
        return isinstance(value, dict) and _count(value.get("length")) and isinstance(
            value.get("sha256"), str)

    def reading(value: Any) -> bool:
        return value is None or (isinstance(value, list) and len(value) == 3 and isinstance(
            value[0], str) and _count(value[1]) and isinstance(value[2], str))

    fields: dict[str, Callable[[Any], bool]] = {
        "inputs": lambda v: isinstance(v, list) and all(isinstance(p, str) for p in v),
        "pieces": _count, "files": _count, "total": _count, "output": written, "journal": written,
        "reading": reading,
        "statuses": lambda v: isinstance(v, dict) and set(v) == {
            "valid", "invalid", "indeterminate"} and all(map(_count, v.values())),
        "codes": lambda v: isinstance(v, dict) and all(map(_count, v.values())),
        "check": lambda v: isinstance(v, str)}
    for name, valid in fields.items():
        if name not in state or not valid(state[name]):
            return f"a valid {name!r} field"
    return None


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _file_entry(value: Any) -> bool:
    """Whether a journal entry is an input file read to its end, as the audit writes it."""
    return (type(value) is dict and set(value) == {"file", "length", "sha256"}
            and type(value["file"]) is str and (value["length"] is None or _count(value["length"]))
            and (value["sha256"] is None or type(value["sha256"]) is str))


def _index_entry(value: Any) -> bool:
    """Whether a journal entry is a registration indexed for conflicts, as the audit writes
    it: its IRI, its declaration (inputs, outputs and the ontology's ids and versions or
    null, each a list of strings), its source and its index (null for a file's one)."""
    if type(value) is not list or len(value) != 4:
        return False
    ident, declaration, source, index = value
    return (type(ident) is str and type(source) is str and (index is None or _count(index))
            and type(declaration) is list and len(declaration) == 3
            and _strings(declaration[0]) and _strings(declaration[1])
            and (declaration[2] is None or (
                type(declaration[2]) is list and len(declaration[2]) == 2
                and _strings(declaration[2][0]) and _strings(declaration[2][1]))))


def _strings(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def _frozen(value: Any) -> Any:
    """A declaration read back from JSON, as the tuples it was written from."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value
