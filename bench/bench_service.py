"""Throughput of the validation service: checks/s over HTTP, next to the library's.

Usage: python bench/bench_service.py [--checks 3000] [--concurrency 16] [--runs 3] [--save FILE]
(with the project and its serve extra installed). Inputs: the 6.2 example, the same bytes
every time (so the Checker's decision cache answers, over HTTP as in the library), and each
of bench/traffic.py's envelope streams (every envelope distinct: each one is judged).

Rows, for each input:

* library, 1 thread: ``Checker.check()`` in this process, one envelope after another;
* library, 2 threads: the same Checker shared by two threads (the GIL: about one core);
* HTTP, 1 process, --threads 2: ``ioa-check serve --threads 2``, one server process whose
  two check workers (processes of their own) run the checks;
* HTTP, --workers 2: ``ioa-check serve --workers 2 --threads 2``: two processes on the
  shared socket, each with its own Checker.

Each row is measured ``--runs`` times (the HTTP ones on one server) and says the best and
the median run: on a machine shared with other work, the best run is the one least
disturbed. The HTTP rows are measured with ``--concurrency`` connections kept alive, each sending one
request after another (``POST /v1/check?at=...``), from a minimal HTTP/1.1 client on asyncio
in this process: a client costs the same machine's cores too, and httpx's per request cost
would be most of what is measured. Every answer is read whole and must be 200 with the
verdict the library gives. The access log is on (one line per request, to a pipe this
process reads), as a deployment runs it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import traffic
from bench_check import machine  # the machine line every benchmark prints

from ioa_semantic import Checker

ROOT = Path(__file__).resolve().parents[1]
AT = datetime(2026, 6, 1, tzinfo=UTC)
AT_TEXT = "2026-06-01T00:00:00Z"


class Server:
    """``ioa-check serve`` as a process on a free loopback port."""

    def __init__(self, *options: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ioa_semantic", "serve", "--profile", "cs-translation",
             "--port", "0", *options], cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
        assert self.process.stderr is not None
        for line in self.process.stderr:
            found = re.search(r"listening on http://([^:]+):(\d+)", line)
            if found:
                self.host, self.port = found.group(1), int(found.group(2))
                break
        else:
            raise SystemExit(f"the service did not start: {self.process.wait()}")
        # The access log: read and dropped, so the pipe never fills.
        self._drain = threading.Thread(target=self._dropped, daemon=True)
        self._drain.start()

    def _dropped(self) -> None:
        assert self.process.stderr is not None
        for _ in self.process.stderr:
            pass

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(60)


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    body: bytes) -> bytes:
    writer.write(b"POST /v1/check?at=" + AT_TEXT.encode() + b" HTTP/1.1\r\nHost: bench\r\n"
                 b"Content-Type: application/ld+json\r\nContent-Length: %d\r\n\r\n" % len(body)
                 + body)
    status = await reader.readline()
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    answer = await reader.readexactly(length)
    if not status.startswith(b"HTTP/1.1 200"):
        raise SystemExit(f"answered {status!r}: {answer[:200]!r}")
    return answer


async def _over_http(server: Server, bodies: list[bytes], verdicts: list[str],
                     concurrency: int) -> float:
    """checks/s for ``bodies`` sent over ``concurrency`` connections, each answer checked."""
    connections = [await asyncio.open_connection(server.host, server.port)
                   for _ in range(concurrency)]
    # Warm-up: every connection (and so every worker) answers a few first.
    for reader, writer in connections:
        for body in bodies[:5]:
            await _exchange(reader, writer, body)
    queue: Iterator[int] = iter(range(len(bodies)))

    async def sender(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for index in queue:
            answer = await _exchange(reader, writer, bodies[index])
            if json.loads(answer)["verdict"] != verdicts[index]:
                raise SystemExit(f"envelope {index}: {answer[:300]!r}")

    start = time.perf_counter()
    await asyncio.gather(*(sender(r, w) for r, w in connections))
    elapsed = time.perf_counter() - start
    for _, writer in connections:
        writer.close()
    return len(bodies) / elapsed


def _library(checker: Checker, bodies: list[bytes], threads: int) -> float:
    for body in bodies[:50]:
        checker.check(body, at=AT)
    start = time.perf_counter()
    if threads == 1:
        for body in bodies:
            checker.check(body, at=AT)
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(lambda body: checker.check(body, at=AT), bodies))
    return len(bodies) / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checks", type=int, default=3000, help="checks per row")
    parser.add_argument("--concurrency", type=int, default=16, help="HTTP connections")
    parser.add_argument("--runs", type=int, default=3, help="runs of each row")
    parser.add_argument("--save", help="write the rows as JSON to this file")
    opts = parser.parse_args()
    example = (ROOT / "examples" / "envelope-6.2.jsonld").read_bytes()
    inputs: dict[str, list[bytes]] = {"6.2 example (repeated)": [example] * opts.checks}
    for name, senders in traffic.ENVELOPE_STREAMS.items():
        inputs[f"stream: {name}"] = traffic.envelopes(opts.checks, senders)
    checker = Checker("cs-translation")
    verdicts = {name: [str(checker.check(b, at=AT).verdict) for b in bodies]
                for name, bodies in inputs.items()}
    print(machine())
    print(f"{opts.checks} checks a row; HTTP: {opts.concurrency} connections; load "
          f"{os.getloadavg()[0]:.2f}")
    rows: list[dict[str, Any]] = []
    setups = {"HTTP, 1 process, --threads 2": ("--threads", "2"),
              "HTTP, --workers 2": ("--workers", "2", "--threads", "2")}
    print(f"{'input':28} {'how':30} {'best/s':>8} {'median/s':>9}")

    def row(name: str, how: str, rates: list[float]) -> None:
        rows.append({"input": name, "how": how, "best": max(rates),
                     "median": statistics.median(rates), "runs": rates})
        print(f"{name:28} {how:30} {max(rates):8.0f} {statistics.median(rates):9.0f}",
              flush=True)

    for name, bodies in inputs.items():
        for threads in (1, 2):
            # A Checker of its own per run, as a server of its own is (an empty cache).
            row(name, f"library, {threads} thread(s)",
                [_library(Checker("cs-translation"), bodies, threads) for _ in range(opts.runs)])
        for how, options in setups.items():
            server = Server(*options)
            try:
                row(name, how, [asyncio.run(_over_http(server, bodies, verdicts[name],
                                                       opts.concurrency))
                                for _ in range(opts.runs)])
            finally:
                server.stop()
    if opts.save:
        Path(opts.save).write_text(json.dumps({"machine": machine(), "checks": opts.checks,
                                               "concurrency": opts.concurrency,
                                               "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
