"""A report made before it may be shown: held in memory up to a few MiB and on disk past them
(a temporary file, gone when the report is), then written to its stream whole, or not at all.

``trace --store`` makes its report before it records the runs and shows it once they are
recorded: the report's runs and audits are let go in between, so that a long run's feed does
not hold them beside the store's own copies.
"""

from __future__ import annotations

import tempfile
from types import TracebackType
from typing import IO, Any

from .._exceptions import WriteFailed

# Reports up to this many bytes stay in memory; larger ones go to the temporary file.
HELD_IN_MEMORY = 8 << 20
# A held report is written to its stream this many characters at a time.
_PIECE = 1 << 20
HOLDER = "a temporary file holding the report until the runs are recorded"


class HeldReport:
    """A text stream for a reporter, standing for ``stream`` until :meth:`show` writes to it
    what was written here. A reporter draws on it as it would on ``stream``: it answers
    ``isatty`` and ``encoding`` as ``stream`` does (rich reads both to choose its styles and
    characters)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        # Closed by close() (the report's with-block), not a with-block of its own.
        self._file: Any = tempfile.SpooledTemporaryFile(  # noqa: SIM115
            max_size=HELD_IN_MEMORY, mode="w+", encoding="utf-8", errors="surrogatepass",
            newline="")

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"

    def isatty(self) -> bool:
        isatty = getattr(self._stream, "isatty", None)
        try:
            return bool(isatty()) if isatty is not None else False
        except ValueError:  # a closed stream
            return False

    def write(self, text: str) -> int:
        try:
            return int(self._file.write(text))
        except OSError as exc:  # the temporary folder full or gone: the report cannot be held
            raise WriteFailed(HOLDER, exc) from exc

    def flush(self) -> None:
        """Nothing is shown before :meth:`show`."""

    def show(self) -> None:
        """What was written here, written to the stream (its errors are the stream's)."""
        try:
            self._file.seek(0)
        except OSError as exc:
            raise WriteFailed(HOLDER, exc) from exc
        while True:
            try:
                piece = self._file.read(_PIECE)
            except OSError as exc:
                raise WriteFailed(HOLDER, exc) from exc
            if not piece:
                break
            self._stream.write(piece)
        self._stream.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> HeldReport:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
