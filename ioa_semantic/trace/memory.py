"""The bound on the trace audit's memory (``--max-memory``), held while the inputs are read.

A run is judged whole: its calls are read into the fold, then built into a run, judged, and
(with ``--store``) recorded with its graph. Reading is the one stage whose size the input
decides a line at a time, so that is where the bound is held: after each batch of lines the
process's resident memory is read (``/proc/self/statm``, an operation, never a clock) and the
memory the later stages will want is projected from what reading took so far. When the
projection passes the bound, reading the input stops and its run is not judged: it gets the
reason ``trace.memory-bound``, naming the bound, rather than a verdict on part of it or an
out-of-memory kill.

The projection's factors are measured (docs/performance.md, "The trace audit at scale" and
"A long feed's store"): on a run of 120,000 mas-lab events, what follows the reading took
0.4 times what the reading took without a store, and 1.5 times with a store (the run built
again as the store keeps it and judged, its graph written in chunks, its record in parts).
Since the fold holds its calls slotted, reading takes less and the rest the same: 1.6 times
on a run of 360,000 and 1.7 times on a run of 1,000,000 with a store, 0.4 without.

Since a private store's copy of a run is made a call at a time, each plain call let go as
its copy is made, and the store's record is written in small parts ("A million events,
held once", docs/performance.md), storing takes a fixed part (the store's own buffers and
files, the graph's chunk in hand: about 53 MiB) and a part that grows with the run, about
0.4 times what reading took: 77, 119 and 246 MiB past reading on runs of 120,000, 360,000
and 1,000,000 events, which read 59, 176 and 480 MiB. Since digests are held as their bytes
and a private store's record is no second copy of the calls judged, reading the million
events takes 388 MiB and storing 250 past it: 64 MiB and about 0.5 times. The bound keeps 64
MiB for the fixed part and once again what reading took for the rest.

Since a run of mas-lab events is built from its fold a call at a time, each of the fold's
calls let go as the run's is made, and the JSON report is written as it is made ("A fold
spent as its run is built", docs/performance.md), what follows the reading of such a run
takes much less: on runs of 300,000 and 1,000,000 events, which read 115 and 388 MiB, 0.15
times that without a store, and 78 and 124 MiB past it with one (about 59 MiB and 0.17
times). For these the bound keeps a fifth of what reading took, and with a store the same
fixed part and a quarter, for a text or JSON report: the HTML page orders the calls of a
run for its timeline (two numbers and a key a call, about 0.55 times the reading, measured
on 150,000 calls), and is projected as before. A store's graph with its trajectory (three
nodes and about thirty triples a call) took 64 MiB and 0.6 times the reading in a plain
store, and 2.4 times in a private one (the run as the store judges it too, measured on
150,000 calls): with a trajectory the bound keeps 64 MiB and 2.5 times, whatever the input.
The spans of OTLP inputs are read together and built from folds that stay whole until all
are built: for them the factors stay as they were.

Since the members few calls have share one slot, in the fold's calls and in the run's, and
a call's times are held as the floats mas-lab wrote them as (trace/folded.py, trace/calls.py,
trace/instants.py: "Calls held compact", docs/performance.md), the run built is no larger than
the fold it is built from: reading a million events takes 319 MiB, and what follows 42 MiB
past it without a store (0.13 times), 105 MiB with a private one (64 MiB and 0.13 times).
With a store the bound keeps the fixed part and a fifth, as without.
"""

from __future__ import annotations

import os
from typing import Any

from .._exceptions import IoaSemanticError

DEFAULT_MAX_MEMORY = 512 << 20
# What follows reading takes, in multiples of what reading took (see above): for OTLP spans
# (and an input whose format is not known yet), and for mas-lab events ("events").
LATER_STAGES = 1.0
LATER_STAGES_STORE = 1.0
LATER_STAGES_EVENTS = 0.2
LATER_STAGES_STORE_EVENTS = 0.2
# With --trajectory, storing takes this many times what reading took (see above).
LATER_STAGES_STORE_TRAJECTORY = 2.5
# What storing takes whatever the run's size (see above).
STORE_FIXED = 64 << 20
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class MemoryBound(IoaSemanticError):
    """Judging an input would take more memory than the bound allows."""


def resident() -> int | None:
    """The process's resident memory in bytes, or None where it cannot be read (not Linux):
    the bound is then not held, and the documentation says so."""
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


# glibc's mallopt parameter: the size from which an allocation is a mapping of its own.
_M_MMAP_THRESHOLD = -3
LARGE_BUFFER = 1 << 20


def return_large_buffers() -> None:
    """Have the C allocator map every buffer of :data:`LARGE_BUFFER` or more on its own, so
    that it goes back to the system when freed. glibc raises that threshold, by default, each
    time such a buffer is freed, up to 32 MiB: the graph's chunks and the record's parts (a few
    MiB each, one after another) then come from the heap, whose freed room the process keeps,
    and a long run's feed held some 30 MiB more than it used (measured, docs/performance.md).
    Nothing happens where the allocator has no such setting."""
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, LARGE_BUFFER)


def give_back() -> None:
    """Hand the C allocator's free room back to the system (glibc's ``malloc_trim``). The
    store's bulk loader parses and sorts each chunk of a long run's graph on threads of its
    own, whose heaps keep what they freed: trimmed after each chunk, a 9,000,000-quad load
    held 95 MiB at its end rather than 120 (measured, docs/performance.md), while the run it
    writes is still held. Nothing happens where the allocator has no such call."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _malloc_trim() -> Any:
    global _TRIM
    if _TRIM is _UNKNOWN:
        try:
            import ctypes

            _TRIM = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):
            _TRIM = None
    return _TRIM


_UNKNOWN: Any = object()
_TRIM: Any = _UNKNOWN


def mebibytes(size: int) -> str:
    """A size as --max-memory takes it, in its largest whole unit up to MiB (a bound under
    1 MiB is no "0 MiB")."""
    if size >= 1 << 20:  # what the process holds, rounded
        return f"{size / (1 << 20):.0f} MiB"
    if size >= 1 << 10 and size % (1 << 10) == 0:
        return f"{size >> 10} KiB"
    return f"{size} bytes"


class Budget:
    """The bound of one invocation: ``limit`` bytes of resident memory at most, of which the
    later stages of each run want :data:`LATER_STAGES` times what its reading took, or, when
    the runs are ``storing`` too, :data:`STORE_FIXED` and :data:`LATER_STAGES_STORE` times
    what its reading took (for a run of mas-lab events, ``format`` "events", reported as
    text or JSON, :data:`LATER_STAGES_EVENTS` and :data:`LATER_STAGES_STORE_EVENTS`; stored
    with its ``trajectory``, :data:`LATER_STAGES_STORE_TRAJECTORY`). ``report``: the
    report's format (``--format``)."""

    def __init__(self, limit: int, storing: bool = False, report: str = "text",
                 trajectory: bool = False) -> None:
        self.limit = limit
        self.storing = storing
        self.report = report
        self.trajectory = trajectory
        self.fixed = STORE_FIXED if storing else 0
        self.base = resident()
        self.checks = 0  # how often memory was read (tests count it)

    def later(self, format: str | None = None) -> float:
        """What the later stages of an input of ``format`` take, in multiples of reading."""
        if self.storing and self.trajectory:
            return LATER_STAGES_STORE_TRAJECTORY
        if format == "events" and self.report != "html":
            return LATER_STAGES_STORE_EVENTS if self.storing else LATER_STAGES_EVENTS
        return LATER_STAGES_STORE if self.storing else LATER_STAGES

    def reading_limit(self, format: str | None = None) -> int | None:
        """The resident memory reading an input of ``format`` may reach, or None where it
        cannot be read."""
        if self.base is None:
            return None
        room = self.limit - self.base - self.fixed
        if room <= 0:  # the process and the store alone hold the bound: nothing fits
            return min(self.limit, self.base)
        return self.base + int(room / (1 + self.later(format)))

    def check(self, where: str, format: str | None = None) -> None:
        """Raise :class:`MemoryBound` if reading an input of ``format`` so far (to ``where``)
        leaves the later stages too little of the bound."""
        self.checks += 1
        limit = self.reading_limit(format)
        now = resident()
        if limit is None or now is None or now <= limit:
            return
        raise MemoryBound(
            f"cannot be judged within --max-memory {mebibytes(self.limit)}: at {where} "
            f"the process held {mebibytes(now)}, and judging "
            f"{'and storing ' if self.storing else ''}a run takes up to "
            f"{f'{mebibytes(self.fixed)} and ' if self.fixed else ''}"
            f"{1 + self.later(format):g} times what reading it did; nothing of it was judged "
            f"{'or stored ' if self.storing else ''}(raise --max-memory, "
            "or split the run)")
