"""A report made before it may be shown: held in memory up to a few MiB and on disk past them
(an unnamed temporary file, gone with the report), then written to its stream whole, or not
at all.

``trace --store`` makes its report before it records the runs and shows it once they are
recorded: the report's runs and audits are let go in between, so that a long run's feed does
not hold them beside the store's own copies. The temporary folder is the environment's, and
the feed did without one before: where it cannot take the report (missing, read-only, full,
even part way), the report is held in memory instead, as a feed held it before, and the feed
goes on.
"""

from __future__ import annotations

import codecs
import os
import stat
import tempfile
from types import TracebackType
from typing import IO, Any

from .._exceptions import WriteFailed
from .lines import is_terminal

# Reports up to this many characters stay in memory; past them, they go to a temporary file
# this many characters at a time.
HELD_IN_MEMORY = 8 << 20
# A held report is read back and written to its stream this many bytes at a time.
_PIECE = 1 << 20
HOLDER = "a temporary file holding the report until the runs are recorded"
_ENCODING, _ERRORS = "utf-8", "surrogatepass"  # any text a reporter writes goes through


class HeldReport:
    """A text stream for a reporter, standing for ``stream`` until :meth:`show` writes to it
    what was written here. A reporter draws on it as it would on ``stream``: it answers
    ``isatty`` and ``encoding`` as ``stream`` does (rich reads both to choose its styles and
    characters)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        # A report for the null device (trace serve's judge, whose verdicts are the store's)
        # is held nowhere: nothing would read it.
        self._discarded = _is_null_device(stream)
        self._pending: list[str] = []  # written here, not yet on disk
        self._pending_chars = 0
        self._file: Any = None  # the temporary file, once the report passes HELD_IN_MEMORY
        self._on_disk = 0  # bytes of whole pieces the file holds
        self._disk_failed = False  # the temporary folder could not take it: memory only

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"

    @property
    def on_disk(self) -> bool:
        """Whether part of the report is held in the temporary file."""
        return self._file is not None

    def isatty(self) -> bool:
        return is_terminal(self._stream)

    def write(self, text: str) -> int:
        if self._discarded:
            return len(text)
        self._pending.append(text)
        self._pending_chars += len(text)
        if self._pending_chars >= HELD_IN_MEMORY and not self._disk_failed:
            self._spill()
        return len(text)

    def flush(self) -> None:
        """Nothing is shown before :meth:`show`."""

    def _spill(self) -> None:
        """What is pending written to the temporary file, or, where the folder cannot take it,
        everything kept in memory from now on (what the file holds read back)."""
        data = "".join(self._pending).encode(_ENCODING, _ERRORS)
        try:
            if self._file is None:
                # Unbuffered: a write the disk refuses part way is known to the byte.
                self._file = tempfile.TemporaryFile("w+b", buffering=0)  # noqa: SIM115
            view = memoryview(data)
            while view:
                view = view[self._file.write(view):]
        except OSError:
            self._back_to_memory()
            return
        self._on_disk += len(data)
        self._pending, self._pending_chars = [], 0

    def _back_to_memory(self) -> None:
        self._disk_failed = True
        if self._file is None:
            return
        try:
            self._file.seek(0)
            held = self._file.read(self._on_disk)
        except OSError as exc:  # what the file held cannot be read back: the report is lost
            raise WriteFailed(HOLDER, exc) from exc
        finally:
            self._close_file()
        self._pending.insert(0, held.decode(_ENCODING, _ERRORS))
        self._on_disk = 0

    def show(self) -> None:
        """What was written here, written to the stream (its errors are the stream's)."""
        if self._file is not None:
            decoder = codecs.getincrementaldecoder(_ENCODING)(_ERRORS)
            try:
                self._file.seek(0)
            except OSError as exc:
                raise WriteFailed(HOLDER, exc) from exc
            left = self._on_disk
            while left:
                try:
                    piece = self._file.read(min(_PIECE, left))
                except OSError as exc:
                    raise WriteFailed(HOLDER, exc) from exc
                if not piece:  # the file is shorter than what was written to it
                    raise WriteFailed(HOLDER, OSError("the temporary file was cut short"))
                left -= len(piece)
                self._stream.write(decoder.decode(piece, final=not left))
        for text in self._pending:
            self._stream.write(text)
        self._stream.flush()

    def _close_file(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def close(self) -> None:
        self._close_file()
        self._pending = []

    def __enter__(self) -> HeldReport:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


def _is_null_device(stream: IO[str]) -> bool:
    """Whether ``stream`` writes to the null device."""
    try:
        held = os.fstat(stream.fileno())
        null = os.stat(os.devnull)
    except (AttributeError, OSError, ValueError):  # no descriptor (a test's buffer), or closed
        return False
    return stat.S_ISCHR(held.st_mode) and held.st_rdev == null.st_rdev
