"""The A2A gate under slow envelopes: normal requests' throughput and latency through the
real SDK server, while other clients send envelopes whose check is slow.

Usage: python bench/bench_a2a.py [--seconds S] [--normal N] [--slow-seconds T]
(needs the [a2a] extra). The agent runs in a process of its own (uvicorn on a loopback port)
so that the clients do not share its GIL; N clients send the 6.2 envelope back to back, and
for some rows more clients send slow envelopes back to back:

* a SIMULATED slow check: the agent's Checker is wrapped so that an envelope carrying the
  term ``SIMULATED-SLOW`` sleeps T seconds before it is checked (a stand-in for a remote
  context or a pathological envelope, independent of how fast the checker is today);
* a real large envelope: 5,000 term bindings (about 400 KiB), which the checker itself is slow
  on.

Each load runs against the gate as it is (checks on its worker threads, within the time
limit) and against the gate as it was (``inline``: the check on the event loop's thread).
The checker's decision cache is off, so every request is checked. The last column is the
agent process's CPU time over every request of the row (Linux only): rates on a shared
machine drift with its load, CPU time much less.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format

from ioa_semantic import Checker, Decision
from ioa_semantic.a2a import DEFAULT_EXTENSION_URI, DEFAULT_MAX_CHECKS, attach_envelope

ROOT = Path(__file__).resolve().parents[1]
AT = datetime(2026, 6, 1, tzinfo=UTC)
SLOW_TERM = "SIMULATED-SLOW"
LARGE_BINDINGS = 5000


def envelope(term: str = "LLM", bindings: int = 1) -> bytes:
    doc = json.loads((ROOT / "examples" / "envelope-6.2.jsonld").read_bytes())
    doc["profileContext"]["termBindings"] = [
        {"@type": "ioa:TermBinding", "term": term if i == 0 else f"T{i}",
         "sense": "cs:LargeLanguageModel"} for i in range(bindings)]
    return json.dumps(doc).encode()


class SimulatedSlowChecker(Checker):
    """SIMULATED slow check (bench only): an envelope carrying the term ``SIMULATED-SLOW``
    sleeps ``delay`` seconds before the real check; every other envelope is checked as is."""

    def __init__(self, delay: float) -> None:
        super().__init__("cs-translation", cache_size=0)
        self.delay = delay

    def check(self, envelope: Any, **options: Any) -> Decision:
        if isinstance(envelope, str) and SLOW_TERM in envelope:
            time.sleep(self.delay)
        return super().check(envelope, **options)


def serve(port: int, gate: str, delay: float) -> None:
    """The agent: a gate in front of an executor that answers every task it is given."""
    import uvicorn
    from a2a.server.agent_execution.agent_executor import AgentExecutor
    from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from starlette.applications import Starlette

    from ioa_semantic.a2a import SemanticGateHandler, context_builder

    class Answer(AgentExecutor):
        async def execute(self, context: Any, event_queue: Any) -> None:
            await event_queue.enqueue_event(pb.Message(
                role=pb.Role.ROLE_AGENT, message_id="answer", parts=[pb.Part(text="done")]))

        async def cancel(self, context: Any, event_queue: Any) -> None:
            return None

    class InlineGate(SemanticGateHandler):
        """The gate as it was: the check on the event loop's own thread."""

        async def _judged(self, envelope: Any, at: datetime) -> Decision:
            return self.checker.check(envelope, at=at)

    card = pb.AgentCard(
        name="bench", description="d", version="1", default_input_modes=["text/plain"],
        default_output_modes=["text/plain"], capabilities=pb.AgentCapabilities(),
        skills=[pb.AgentSkill(id="s", name="s", description="d", tags=["t"])],
        supported_interfaces=[pb.AgentInterface(url=f"http://127.0.0.1:{port}/a2a",
                                                protocol_binding="JSONRPC", protocol_version="1.0")])
    handler = (InlineGate if gate == "inline" else SemanticGateHandler)(
        agent_executor=Answer(), task_store=InMemoryTaskStore(), agent_card=card,
        checker=SimulatedSlowChecker(delay), clock=lambda: AT)
    app = Starlette(routes=create_jsonrpc_routes(handler, "/a2a", context_builder=context_builder()))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error")


def body(envelope_bytes: bytes) -> dict[str, Any]:
    msg = attach_envelope(pb.Message(role=pb.Role.ROLE_USER, message_id="m",
                                     parts=[pb.Part(text="please translate")]), envelope_bytes)
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": json_format.MessageToDict(msg)}}


HEADERS = {"A2A-Version": "1.0", "A2A-Extensions": DEFAULT_EXTENSION_URI}


async def clients(url: str, seconds: float, loads: dict[str, tuple[int, dict[str, Any]]]
                  ) -> dict[str, list[tuple[float, bool]]]:
    """Each load's clients send its request back to back for ``seconds``: (latency, accepted)
    of each request that started in time."""
    out: dict[str, list[tuple[float, bool]]] = {name: [] for name in loads}
    until = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)

    async def client(name: str, request: dict[str, Any], client: httpx.AsyncClient) -> None:
        count = 0
        while time.perf_counter() < until:
            count += 1
            request["params"]["message"]["messageId"] = f"{name}-{id(client)}-{count}"
            start = time.perf_counter()
            answer = (await client.post(url, json=request, headers=HEADERS)).json()
            out[name].append((time.perf_counter() - start, "result" in answer))

    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        await asyncio.gather(*(client(name, json.loads(json.dumps(request)), http)
                               for name, (count, request) in loads.items()
                               for _ in range(count)))
    return out


def start(gate: str, delay: float) -> tuple[subprocess.Popen[bytes], str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    process = subprocess.Popen([sys.executable, __file__, "--serve", str(port), gate,
                                "--slow-seconds", str(delay)])
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, f"http://127.0.0.1:{port}/a2a"
        except OSError:
            if time.monotonic() > deadline:
                process.kill()
                raise SystemExit("the bench agent did not start") from None
            time.sleep(0.1)


def cpu_seconds(process: subprocess.Popen[bytes]) -> float | None:
    """The agent process's CPU time so far (Linux), less noisy on a shared machine than rates."""
    try:
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def quantile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=4.0, help="per row")
    parser.add_argument("--normal", type=int, default=8, help="clients sending the 6.2 envelope")
    parser.add_argument("--slow-seconds", type=float, default=1.0,
                        help="the simulated slow check's sleep")
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "GATE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), args.serve[1], args.slow_seconds)
        return
    normal = body(envelope())
    simulated = body(envelope(SLOW_TERM))
    large_bytes = envelope(bindings=LARGE_BINDINGS)
    large = body(large_bytes)
    checker = Checker("cs-translation", cache_size=0)
    checker.check(large_bytes, at=AT)
    begin = time.perf_counter()
    checker.check(large_bytes, at=AT)
    large_ms = (time.perf_counter() - begin) * 1e3
    rows = [
        ("normal only", {}),
        (f"+ 2 simulated slow ({args.slow_seconds:g} s sleep)", {"slow": (2, simulated)}),
        (f"+ {DEFAULT_MAX_CHECKS} simulated slow ({args.slow_seconds:g} s sleep)",
         {"slow": (DEFAULT_MAX_CHECKS, simulated)}),
        (f"+ 2 large envelopes ({len(large_bytes) // 1024} KiB)", {"slow": (2, large)}),
    ]
    print(f"{args.normal} clients send the 6.2 envelope back to back for {args.seconds:g} s a row; "
          f"others send slow envelopes (a real large one: {LARGE_BINDINGS:,} term bindings, "
          f"{large_ms:.0f} ms a check on its own). Gate: 'threads' = this build "
          f"({DEFAULT_MAX_CHECKS} check threads, 10 s limit), 'inline' = the check on the "
          "event loop (before).")
    print(f"{'gate':8} {'load':36} {'normal req/s':>12} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'refused':>7} {'slow done':>9} {'slow p50 ms':>11} {'agent CPU ms/req':>16}")
    agents = {gate: start(gate, args.slow_seconds) for gate in ("inline", "threads")}
    try:
        for _, url in agents.values():
            asyncio.run(clients(url, 1.0, {"normal": (args.normal, normal)}))  # warm-up
        # Row by row, the old gate next to the new: the machine's load drifts less between them.
        for label, extra in rows:
            for gate, (process, url) in agents.items():
                cpu = cpu_seconds(process)
                got = asyncio.run(clients(url, args.seconds,
                                          {"normal": (args.normal, normal), **extra}))
                latencies = [t for t, _ in got["normal"]]
                refused = sum(not ok for _, ok in got["normal"])
                slow = [t for t, _ in got.get("slow", [])]
                after = cpu_seconds(process)
                done = len(latencies) + len(slow)
                used = (f"{(after - cpu) / done * 1e3:.2f}" if cpu is not None and after is not None
                        else "-")
                print(f"{gate:8} {label:36} {len(latencies) / args.seconds:12.0f} "
                      f"{statistics.median(latencies) * 1e3:8.1f} "
                      f"{quantile(latencies, 0.99) * 1e3:8.1f} {refused:7d} "
                      f"{len(slow) if slow else '-':>9} "
                      f"{f'{statistics.median(slow) * 1e3:.0f}' if slow else '-':>11} {used:>16}", flush=True)
    finally:
        for process, _ in agents.values():
            process.terminate()
            process.wait(10)

if __name__ == "__main__":
    main()
