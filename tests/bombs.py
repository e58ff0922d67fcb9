"""Resource bombs against the checker: each builds the bytes of one hostile envelope.

Shared by tests/test_hardening.py (generous bounds) and bench/bench_bombs.py (figures).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from support import envelope_62


def _with(mutate: Callable[[dict], None]) -> bytes:
    doc = envelope_62()
    mutate(doc)
    return json.dumps(doc).encode()


def nested_arrays() -> bytes:
    return b"[" * (1 << 20)


def capability_refs() -> bytes:
    return _with(lambda d: d.__setitem__(
        "capabilityRefs", ["cs:TechTranslation"] + [f"cs:C{i}" for i in range(100_000)]))


def term_bindings() -> bytes:
    return _with(lambda d: d["profileContext"].__setitem__("termBindings", [
        {"@type": "ioa:TermBinding", "term": f"T{i}", "sense": "cs:LargeLanguageModel"}
        for i in range(100_000)]))


def long_string() -> bytes:
    return _with(lambda d: d.__setitem__("ontologyVersion", "x" * ((1 << 20) - 4096)))


def wide_context() -> bytes:
    return _with(lambda d: d["@context"].update(
        {f"t{i}": f"https://terms.example/{i}" for i in range(10_000)}))


def deep_scoped_contexts() -> bytes:
    inner = "{}"
    for _ in range(1000):
        inner = '{"s": {"@id": "https://terms.example/s", "@context": ' + inner + "}}"
    text = json.dumps(envelope_62())
    return text.replace('"@context": {', '"@context": [' + inner + ", {", 1).replace(
        '"cs": "https://example.org/onto/cs#"}', '"cs": "https://example.org/onto/cs#"}]', 1
    ).encode()


def deep_graphs() -> bytes:
    inner = '{"@id": "https://terms.example/n"}'
    for _ in range(60):
        inner = '{"@graph": [' + inner + "]}"
    return _with(lambda d: d.__setitem__("@included", [json.loads(inner)]))


BOMBS: dict[str, Callable[[], bytes]] = {
    "1 MiB of nested arrays": nested_arrays,
    "100,000 capabilityRefs": capability_refs,
    "100,000 term bindings": term_bindings,
    "a 1 MiB string": long_string,
    "a context with 10,000 terms": wide_context,
    "scoped contexts nested 1,000 deep": deep_scoped_contexts,
    "@graph in @included nested 60 deep": deep_graphs,
}
