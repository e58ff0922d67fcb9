"""What the A2A gate adds to a request: extracting the envelope and checking it.

Usage: python bench/bench_a2a.py [--rounds N]   (needs the [a2a] extra)
Measures ``SemanticGateHandler.admit`` on an SDK message carrying the 6.2 envelope (the
gate's whole work before the SDK's own handling), p50 and p99, with the compiled checker.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import a2a_pb2 as pb

from ioa_semantic import Checker
from ioa_semantic.a2a import SemanticGateHandler, attach_envelope

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5000)
    rounds = parser.parse_args().rounds
    card = pb.AgentCard(name="bench", description="d", version="1")
    gate = SemanticGateHandler(agent_executor=None, task_store=InMemoryTaskStore(),  # type: ignore[arg-type]
                               agent_card=card, checker=Checker("cs-translation", cache_size=0),
                               clock=lambda: datetime(2026, 6, 1, tzinfo=UTC))
    message = attach_envelope(pb.Message(role=pb.Role.ROLE_USER, message_id="m"),
                              (ROOT / "examples" / "envelope-6.2.jsonld").read_bytes())
    context = ServerCallContext()
    for _ in range(200):
        gate.admit(message, context)
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        gate.admit(message, context)
        samples.append(time.perf_counter() - start)
    samples.sort()
    print(f"gate overhead per request (envelope extraction + compiled check), {rounds} rounds: "
          f"p50 {statistics.median(samples) * 1e3:.3f} ms, "
          f"p99 {samples[int(len(samples) * 0.99) - 1] * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
