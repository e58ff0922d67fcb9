"""Files the command line writes: never over a file that is not ours, never half in its place.

Every option that writes a file (``audit --output`` and ``--state``, ``trace --state`` and
``--emit-kg``, ``sign --output``) first *claims* its path (:func:`claim`): nothing there, an
empty file, or a file that the same option wrote before (each recognises its own by its
content: a header, a format marker) may be written; anything else (a manifest, a key, a
folder, a device) is refused with :class:`NotOurs` (exit status 2) and left byte for byte as
it was. A symbolic link is never followed: what it points at is someone's file, and the
link is the user's. Whole files are then written under a temporary name in the same folder
and renamed over the path once complete (:class:`Replacement`), so that a run killed half
way leaves the previous file, never a torn one, in its place.

Every file the command line *reads* whole (an envelope, a profile, an artifact, a
registration, a key, a manifest, a bindings file) is read by :func:`read_bounded`: at most
its limit and one byte more, whatever the file holds (``/dev/zero``, a sparse file of
gigabytes), so that memory stays bounded; a configuration file only when it is a regular
file, refused before it is opened otherwise (a named pipe would block the command until
someone wrote to it).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable, Iterator
from typing import IO

from ._exceptions import ConfigurationError, WriteFailed

# What recognising a file reads of it: every format's marker is in its first line or so.
HEAD_BYTES = 1 << 16
# The most a configuration file (a profile, an alignment artifact, a bindings file, a
# manifest) may hold: sixteen times what an envelope or an artifact may (the intake's 1 MiB),
# so that a larger artifact is still read and excluded with its reason (json.too-large).
CONFIGURATION_BYTES = 16 << 20
# The most a key file (an Ed25519 key, an --opaque-key) may hold: a PEM or JWK key has a few
# hundred bytes.
KEY_BYTES = 64 << 10
# What one read takes at a time.
_CHUNK = 1 << 20


@contextlib.contextmanager
def writing(name: str) -> Iterator[None]:
    """An OSError while writing ``name`` as :class:`WriteFailed` naming it. A reader that went
    away stays a BrokenPipeError (the command line then ends as a shell's pipe does)."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise WriteFailed(name, exc) from exc


class NotOurs(ConfigurationError):
    """A path a file would be written to holds something this option did not write (exit
    status 2); nothing was written to it."""


def claim(path: str, ours: Callable[[bytes], bool], what: str, option: str, *,
          streams: bool = True) -> bool:
    """Whether a file is at ``path``, once it is known that writing there loses nothing of
    anyone's: absent, empty, or a regular file whose first :data:`HEAD_BYTES` bytes ``ours``
    recognises as ``what`` (e.g. "a trace state file"). With ``streams`` (an output), a
    character device or a named pipe, or a link to one (``/dev/null``, ``/dev/stdout``), is
    a stream that stores nothing, written into as it is (see :func:`is_stream`). Anything
    else is :class:`NotOurs`, naming ``option`` and the path. A path whose folder cannot be
    examined is left to the write, whose failure says why (the environment's, exit 74)."""
    if streams and own_stream(path) is not None:
        return True
    try:
        info = os.lstat(path)
    except OSError:  # absent, or a folder on the way that cannot be searched: the write says
        return False
    if streams and is_stream(path):
        return True
    if stat.S_ISLNK(info.st_mode):
        raise NotOurs(f"{option} {path} is a symbolic link: ioa-check does not write through "
                      "one (the file it points at may be anyone's); give the file's own path "
                      "(nothing was written)")
    if not stat.S_ISREG(info.st_mode):
        raise NotOurs(f"{option} {path} exists and is not a file ioa-check writes (it is "
                      f"{_kind(info.st_mode)}); nothing was written: choose another path")
    if info.st_size == 0:
        return True
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            head = os.read(handle, HEAD_BYTES)
        finally:
            os.close(handle)
    except OSError as exc:
        # A file that cannot be read cannot be told to be ours: it is not replaced.
        raise NotOurs(f"{option} {path} exists and cannot be read ({exc.strerror}), so it "
                      f"cannot be told to be {what}: it is left as it is (nothing was "
                      "written)") from None
    if head and not ours(head):
        raise NotOurs(f"{option} {path} exists and is not {what}: it is left as it is (nothing "
                      "was written); remove it yourself or choose another path")
    return True


def is_stream(path: str) -> bool:
    """Whether ``path`` is (or links to) a character device or a named pipe: a stream that
    holds no file to lose (``/dev/null``, ``/dev/stdout``, a pipe a reader waits on), or is
    the process's own standard output or error (:func:`own_stream`). A block device is a
    disk, never one."""
    if own_stream(path) is not None:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def one_file(first: str, second: str) -> bool:
    """Whether two paths name one file: the same path spelt otherwise, a link, a hard link
    (two outputs there would write over each other)."""
    if os.path.realpath(first) == os.path.realpath(second):
        return True
    try:
        return os.path.samefile(first, second)
    except OSError:  # one of them is not there yet
        return False


# The names a shell user gives the command's own standard output and error.
_OWN_STREAMS = {"/dev/stdout": 1, "/dev/fd/1": 1, "/proc/self/fd/1": 1,
                "/dev/stderr": 2, "/dev/fd/2": 2, "/proc/self/fd/2": 2}


def own_stream(path: str) -> int | None:
    """The descriptor (1 or 2) that ``path`` names, or None. Such a path is what the user
    redirected the command's output to, whatever it is (a terminal, a pipe, a file): it is
    written through the descriptor already open, as the shell opened it (``>> log``
    appends), never reopened by name (which would truncate that file) nor replaced (which
    would put a file in place of the link in /dev)."""
    return _OWN_STREAMS.get(os.path.normpath(path)) if path.startswith("/") else None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"


def first_line(head: bytes) -> bytes:
    """The first line of ``head``, without its line end."""
    return head.split(b"\n", 1)[0].rstrip(b"\r")


class Replacement:
    """A file written under a temporary name beside ``path`` (same folder, so the rename is
    atomic) and renamed over it by :meth:`commit`; :meth:`discard` removes it, leaving
    ``path`` as it was. The file gets the permissions a new file would (the umask's), or those
    of the file it replaces. OSError is the caller's to report (the environment's)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.temporary: str | None = None
        if is_stream(path):  # nothing to replace: written into as it is
            own = own_stream(path)
            if own is not None:
                # what the process wrote there before goes first
                (sys.stdout if own == 1 else sys.stderr).flush()
            self.stream: IO[bytes] = (  # closed by commit
                open(path, "wb") if own is None else os.fdopen(os.dup(own), "wb"))  # noqa: SIM115
            return
        folder = os.path.dirname(path) or "."
        # Named, and known to be written aside (ASIDE), before it is made: a process ended
        # between the two (SIGTERM: cli.main) removes it all the same.
        while True:
            self.temporary = os.path.join(
                folder, f".{os.path.basename(path)}.{os.urandom(6).hex()}.partial")
            ASIDE.add(self.temporary)
            try:
                descriptor = os.open(self.temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                                     | getattr(os, "O_CLOEXEC", 0), 0o600)
                break
            except FileExistsError:
                ASIDE.discard(self.temporary)
            except BaseException:
                ASIDE.discard(self.temporary)
                raise
        try:
            os.fchmod(descriptor, _mode_for(path))
            self.stream = os.fdopen(descriptor, "wb")
        except BaseException:
            os.close(descriptor)
            os.unlink(self.temporary)
            ASIDE.discard(self.temporary)
            raise

    def commit(self) -> None:
        """The file complete and synced, then renamed over ``path``."""
        try:
            if not self.stream.closed:
                self.stream.flush()
                if self.temporary is not None:  # a stream is not synced
                    os.fsync(self.stream.fileno())
                self.stream.close()
            if self.temporary is not None:
                os.replace(self.temporary, self.path)
                ASIDE.discard(self.temporary)
                self.temporary = None  # renamed: nothing is left to discard
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.stream.close()
        if self.temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.temporary)
            ASIDE.discard(self.temporary)


# The files this process is writing aside (a Replacement's temporary file), to be removed if
# it is ended before it renames or discards them (see cli.main's SIGTERM handler).
ASIDE: set[str] = set()


def remove_aside() -> None:
    """Remove every file being written aside (the process is ending, unfinished)."""
    for temporary in list(ASIDE):
        with contextlib.suppress(OSError):
            os.unlink(temporary)
    ASIDE.clear()


@contextlib.contextmanager
def replacing(path: str) -> Iterator[IO[bytes]]:
    """A stream whose bytes replace ``path`` when the block completes, and nothing otherwise."""
    replacement = Replacement(path)
    try:
        yield replacement.stream
    except BaseException:
        replacement.discard()
        raise
    replacement.commit()


def write_file(path: str, data: bytes) -> None:
    """``data`` replacing ``path`` atomically (see :class:`Replacement`)."""
    with replacing(path) as stream:
        stream.write(data)


def _mode_for(path: str) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        pass
    # The umask can only be read by setting it; this is the command line's main thread.
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


class Unreadable(ConfigurationError):
    """A file that :func:`read_bounded` did not read; the message is why, worded to follow the
    file's name (``cannot be read: ...``), for the caller to name it as its option does."""


class TooLarge(Unreadable):
    """A file over its limit: ``size`` is its size when known (a regular file's), else None
    (a stream: only that it has more than ``limit`` bytes is known)."""

    def __init__(self, size: int | None, limit: int, what: str) -> None:
        self.size = size
        self.limit = limit
        has = f"has {size} bytes, over" if size is not None else "has more bytes than"
        super().__init__(f"cannot be read: it {has} the limit of {limit} bytes {what}")


def read_bounded(path: str | int, limit: int, what: str, *, streams: bool = False) -> bytes:
    """The bytes of the file at ``path`` (or of the open descriptor ``path``, left open),
    having read at most ``limit`` + 1 of them.

    Raises :class:`TooLarge` past ``limit`` (its message ends with ``what``, whose limit it
    is: "for an envelope (--max-bytes)"), and :class:`Unreadable` for a file that cannot be
    read (an OSError, its reason). Unless ``streams`` (an input named on the command line, which a process
    substitution or a pipe may give), only a regular file is read: anything else is refused
    before it is opened (a named pipe would block until written to), and it is opened without
    blocking, in case another took its place since."""
    try:
        if isinstance(path, int):
            return _read_at_most(path, limit, what)
        if not streams:
            kind = os.stat(path).st_mode
            if not stat.S_ISREG(kind):
                raise _not_regular(kind, limit, what)
        flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | (0 if streams else os.O_NONBLOCK)
        descriptor = os.open(path, flags)
        try:
            if not streams:
                kind = os.fstat(descriptor).st_mode
                if not stat.S_ISREG(kind):
                    raise _not_regular(kind, limit, what)
            return _read_at_most(descriptor, limit, what)
        finally:
            os.close(descriptor)
    except OSError as exc:
        raise Unreadable(f"cannot be read: {exc.strerror or exc}") from None


def _not_regular(mode: int, limit: int, what: str) -> Unreadable:
    return Unreadable(f"cannot be read: it is {_kind(mode)}, not a regular file; only a "
                      f"regular file is read, up to the limit of {limit} bytes {what}")


def _read_at_most(descriptor: int, limit: int, what: str) -> bytes:
    """What ``descriptor`` holds, or :class:`TooLarge` once more than ``limit`` bytes were
    read (a regular file's size says so before any is)."""
    info = os.fstat(descriptor)
    if stat.S_ISREG(info.st_mode) and info.st_size > limit:
        raise TooLarge(info.st_size, limit, what)
    pieces: list[bytes] = []
    held = 0
    while held <= limit:
        piece = os.read(descriptor, min(_CHUNK, limit + 1 - held))
        if not piece:
            return b"".join(pieces)
        pieces.append(piece)
        held += len(piece)
    # A regular file that grew since, or a stream: its size is the file's if known.
    size = os.fstat(descriptor).st_size if stat.S_ISREG(info.st_mode) else None
    raise TooLarge(size if size is not None and size > limit else None, limit, what)
