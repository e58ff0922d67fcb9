"""Resource bombs against the checker: each builds the bytes of one hostile envelope.

Shared by tests/test_hardening.py (generous bounds) and bench/bench_bombs.py (figures).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from support import envelope_62


def _with(mutate: Callable[[dict[str, Any]], None]) -> bytes:
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


# --- families by size: the bomb suite of issue "Bounded cost" --------------------------------
#
# Each family builds the envelope of one shape that could make some stage superlinear, with
# ``n`` of the thing that repeats; ``largest`` finds the n whose envelope just fits a byte
# limit, so that the suite and bench/bench_bombs.py measure every shape at the default limit.


def many_compact_iri_keys(n: int) -> bytes:
    return _with(lambda d: d.update({f"cs:k{i}": "v" for i in range(n)}))


def many_absolute_iri_keys(n: int) -> bytes:
    return _with(lambda d: d.update({f"https://example.org/onto/cs#k{i}": "v" for i in range(n)}))


def many_unmapped_members(n: int) -> bytes:
    return _with(lambda d: d.update({f"k{i}": "v" for i in range(n)}))


def many_context_objects(n: int) -> bytes:
    return _with(lambda d: d.__setitem__("@context", [d["@context"], *(
        {f"t{i}": f"https://terms.example/{i}"} for i in range(n))]))


def many_context_objects_and_a_finding(n: int) -> bytes:
    def mutate(d: dict[str, Any]) -> None:
        d["@context"] = [d["@context"], *({f"t{i}": f"https://terms.example/{i}"} for i in range(n))]
        d.pop("intentRef")
    return _with(mutate)


def many_term_definitions(n: int) -> bytes:
    return _with(lambda d: d["@context"].update(
        {f"t{i}": {"@id": f"https://terms.example/{i}", "@type": "@id"} for i in range(n)}))


def many_distinct_prefixes(n: int) -> bytes:
    def mutate(d: dict[str, Any]) -> None:
        d["@context"].update({f"p{i}": f"https://p{i}.example/" for i in range(n)})
        d["capabilityRefs"] = ["cs:TechTranslation", *(f"p{i}:x" for i in range(n))]
    return _with(mutate)


def many_bindings(n: int) -> bytes:
    return _with(lambda d: d["profileContext"].__setitem__("termBindings", [
        {"@type": "ioa:TermBinding", "term": f"T{i}", "sense": "cs:LargeLanguageModel"}
        for i in range(n)]))


def many_invalid_bindings(n: int) -> bytes:
    return _with(lambda d: d["profileContext"].__setitem__("termBindings", [
        {"@type": "ioa:TermBinding", "term": "", "sense": f"cs:S{i}"} for i in range(n)]))


def many_references(n: int) -> bytes:
    return _with(lambda d: d.__setitem__(
        "capabilityRefs", ["cs:TechTranslation", *(f"cs:C{i}" for i in range(n))]))


def many_bad_references(n: int) -> bytes:
    return _with(lambda d: d.__setitem__("capabilityRefs", [f"cs:C {i}" for i in range(n)]))


def wide_nodes(n: int) -> bytes:
    return _with(lambda d: d.__setitem__("profileContext", [
        {"@type": "ioa:Context", "domain": "cs:ComputerScience"} for _ in range(n)]))


def many_at_keys(n: int) -> bytes:
    return _with(lambda d: d.update({f"@k{i}": "v" for i in range(n)}))


def long_iri(n: int) -> bytes:
    return _with(lambda d: d.__setitem__("intentRef", "cs:" + "a" * n))


def long_string_n(n: int) -> bytes:
    return _with(lambda d: d.__setitem__("ontologyVersion", "x" * n))


def deep_nesting(n: int) -> bytes:
    inner: dict[str, Any] = {"@type": "ioa:TermBinding", "term": "T", "sense": "cs:S"}
    for _ in range(min(n, 60)):
        inner = {"@type": "ioa:TermBinding", "term": "T", "sense": "cs:S", "x": inner}
    return _with(lambda d: d["profileContext"].__setitem__("termBindings", [inner] * max(1, n // 60)))


FAMILIES: dict[str, Callable[[int], bytes]] = {
    "compact IRI keys": many_compact_iri_keys,
    "absolute IRI keys": many_absolute_iri_keys,
    "unmapped members": many_unmapped_members,
    "keys starting with @": many_at_keys,
    "context objects": many_context_objects,
    "context objects and a finding": many_context_objects_and_a_finding,
    "term definitions": many_term_definitions,
    "distinct prefixes": many_distinct_prefixes,
    "term bindings": many_bindings,
    "invalid term bindings": many_invalid_bindings,
    "references": many_references,
    "references that are no IRIs": many_bad_references,
    "nodes side by side": wide_nodes,
    "nested nodes": deep_nesting,
    "a long IRI": long_iri,
    "a long string": long_string_n,
}


def within_limits(data: bytes, limits: Any = None) -> bool:
    """Whether the envelope passes every limit of ``limits`` (the defaults): the worst
    case a shape can reach is the largest envelope no limit refuses."""
    from ioa_semantic import Limits
    from ioa_semantic.pipeline.contexts import context_limit_findings
    from ioa_semantic.pipeline.intake import value_findings

    limits = limits or Limits()
    if len(data) > limits.max_bytes:
        return False
    document = json.loads(data)
    return not value_findings(document, limits) and not context_limit_findings(
        document, limits.max_contexts, limits.max_terms)


def largest(build: Callable[[int], bytes], limits: Any = None) -> int:
    """The largest n whose envelope every default limit admits (sizes grow with n)."""
    low, high = 1, 2
    while within_limits(build(high), limits):
        low, high = high, high * 2
    while high - low > max(1, low // 64):
        middle = (low + high) // 2
        if within_limits(build(middle), limits):
            low = middle
        else:
            high = middle
    return low
