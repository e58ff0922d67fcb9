"""A translation agent behind the semantic gate: the draft's 12.1 scenario over A2A.

    python examples/a2a/agent.py [PORT]      (default 9999, on 127.0.0.1; needs [a2a])

It offers doc:TranslateText in the document ontology, accepts the shipped cs-doc-v1 mapping
from cs:TechTranslation, and answers only tasks whose envelope is compatible. The
evaluation instant is pinned (2026-06-01) because the shipped artifact expires on
2026-12-31; a real agent leaves the clock alone.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ioa_semantic import Checker

try:
    import uvicorn
    from a2a.server.agent_execution.agent_executor import AgentExecutor
    from a2a.server.routes.agent_card_routes import create_agent_card_routes
    from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from a2a.types import a2a_pb2 as pb
    from starlette.applications import Starlette

    from ioa_semantic.a2a import SemanticGateHandler, context_builder, profile_extension
except ImportError as exc:
    # A missing extra is one line and exit 2, as ioa-check says it, not a traceback.
    # ioa_semantic.a2a says a missing module with the one it lacks as its cause.
    missing = exc if isinstance(exc, ModuleNotFoundError) else exc.__cause__
    reason = (f"{missing.name} is not installed"
              if isinstance(missing, ModuleNotFoundError) and missing.name
              else str(exc).splitlines()[0])
    print(f"agent.py: needs the a2a extra ({reason}): from the clone, pip install '.[a2a]' "
          "(or pip install 'ioa-semantic[a2a]' in the environment that has ioa-semantic)",
          file=sys.stderr)
    raise SystemExit(2) from None

HERE = Path(__file__).resolve().parent


class Translator(AgentExecutor):
    async def execute(self, context: Any, event_queue: Any) -> None:
        await event_queue.enqueue_event(pb.Message(
            role=pb.Role.ROLE_AGENT, message_id="answer",
            parts=[pb.Part(text="(the translated document would be here)")]))

    async def cancel(self, context: Any, event_queue: Any) -> None:
        return None


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9999
    url = f"http://127.0.0.1:{port}"
    checker = Checker("cs-translation", capabilities=[HERE / "provider.jsonld"],
                      alignments=["cs-doc-v1"])
    card = pb.AgentCard(
        name="technical translator", description="zh to en technical translation",
        version="1", default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[pb.AgentSkill(id="translate", name="translate", description="translation",
                              tags=["translation"])],
        capabilities=pb.AgentCapabilities(
            extensions=[profile_extension(checker.profile, required=True)]),
        supported_interfaces=[pb.AgentInterface(url=url + "/a2a", protocol_binding="JSONRPC",
                                                protocol_version="1.0")])
    handler = SemanticGateHandler(agent_executor=Translator(), task_store=InMemoryTaskStore(),
                                  agent_card=card, checker=checker,
                                  clock=lambda: datetime(2026, 6, 1, tzinfo=UTC))
    app = Starlette(routes=create_agent_card_routes(card) + create_jsonrpc_routes(
        handler, "/a2a", context_builder=context_builder()))
    print(f"translation agent on {url} (Ctrl-C to stop)")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
