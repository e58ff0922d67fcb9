"""Send the agent one compatible and one incompatible task.

    python examples/a2a/client.py [URL]      (default http://127.0.0.1:9999)
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from pathlib import Path

from a2a.client.client import ClientCallContext
from a2a.client.client_factory import create_client
from a2a.client.service_parameters import ServiceParametersFactory
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import A2AError

from ioa_semantic.a2a import activation, attach_envelope

EXAMPLES = Path(__file__).resolve().parents[1]


def envelope(sense: str) -> bytes:
    doc = json.loads((EXAMPLES / "envelope-6.2.jsonld").read_text())
    doc["@context"].update({"sourceLang": "ioa:sourceLang", "targetLang": "ioa:targetLang"})
    doc["profileContext"].update({"sourceLang": "zh", "targetLang": "en"})
    doc["profileContext"]["termBindings"][0]["sense"] = sense
    return json.dumps(doc).encode()


async def ask(url: str, name: str, body: bytes) -> None:
    client = await create_client(url)
    message = attach_envelope(pb.Message(role=pb.Role.ROLE_USER, message_id=name,
                                         parts=[pb.Part(text="translate this document")]), body)
    context = ClientCallContext(service_parameters=ServiceParametersFactory.create([activation()]))
    try:
        async for event in client.send_message(pb.SendMessageRequest(message=message),
                                               context=context):
            print(f"{name}: accepted: {event.message.parts[0].text}")
    except A2AError as refused:  # the agent's refusal, its data as the gate discloses it
        data = refused.data if isinstance(refused.data, Mapping) else {}
        codes = ", ".join(data.get("codes", ()))
        print(f"{name}: refused: {refused}" + (f" ({codes})" if codes else ""))
    finally:
        await client.close()


def main() -> None:
    url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:9999"
    asyncio.run(ask(url, "compatible", envelope("cs:LargeLanguageModel")))
    asyncio.run(ask(url, "incompatible", envelope("https://example.org/onto/law#MasterOfLaws")))


if __name__ == "__main__":
    main()
