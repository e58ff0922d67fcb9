"""Remote retrieval (contract section 4, draft 6.1): every refusal has its code and comes fast.

Every network test runs against a server it starts on 127.0.0.1. The made-up names
``ctx.test``, ``other.test`` and ``wrong.test`` reach it only through the policy's injected
resolver: this machine has no DNS, so a fetch that succeeds by name also shows that the
connection went to the address the retriever checked, with no second lookup. The HTTPS
certificate names ``ctx.test`` and ``other.test`` but no IP address, so a successful HTTPS
fetch also shows that TLS was verified against the URL's host name, not the address.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic import ExpansionError, expand
from ioa_semantic._exceptions import RetrievalError, retrieval_error_in
from ioa_semantic.sources.retrieval import (
    RETRIEVAL_CODES,
    Origin,
    Resource,
    ResourceCache,
    RetrievalPolicy,
    Retriever,
    is_public_address,
)

from retrieval_servers import (
    LoopbackServer,
    Reply,
    Sentinel,
    Stopwatch,
    drip,
    endless,
    redirect,
    stall,
)

trustme = pytest.importorskip("trustme", reason="trustme is needed for the HTTPS test servers")

# A hang guard, never a measure: the budgets of a fetch that must succeed, and how long a
# test waits for its threads. Which budget cut a fetch short is told by its code, its message
# and the server's log of requests, never by a clock (issue 35); a fetch that must be cut
# short is made certainly slow (a server that holds its answer until it closes), and one that
# must not gets budgets a loaded machine cannot use up.
HANG = 120.0
TEST_NAMES = frozenset({"ctx.test", "other.test", "wrong.test"})
CONTEXT = {"@context": {"@version": 1.1, "name": "http://schema.org/name"}}
CONTEXT_BYTES = json.dumps(CONTEXT).encode()


def loopback(host: str, port: int) -> list[str]:
    if host in TEST_NAMES:
        return ["127.0.0.1"]
    raise socket.gaierror(socket.EAI_NONAME, f"{host} is not a test name")


@pytest.fixture(scope="module")
def ca() -> Any:
    return trustme.CA()


@pytest.fixture(scope="module")
def server_tls(ca: Any) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("ctx.test", "other.test").configure_cert(context)
    return context


@pytest.fixture(scope="module")
def client_tls(ca: Any) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


@pytest.fixture
def https(server_tls: ssl.SSLContext) -> Iterator[LoopbackServer]:
    with LoopbackServer({"/ctx.jsonld": Reply(CONTEXT_BYTES)}, server_tls) as server:
        yield server


@pytest.fixture
def http() -> Iterator[LoopbackServer]:
    with LoopbackServer({"/ctx.jsonld": Reply(CONTEXT_BYTES)}) as server:
        yield server


@pytest.fixture
def sentinel() -> Iterator[Sentinel]:
    with Sentinel() as listener:
        yield listener


Policy = Callable[..., RetrievalPolicy]


@pytest.fixture
def policy(client_tls: ssl.SSLContext) -> Policy:
    """A policy for loopback servers: private addresses allowed, budgets no fetch that should
    succeed can reach (a test about a budget sets it short)."""

    def make(*origins: str, **options: Any) -> RetrievalPolicy:
        settings: dict[str, Any] = {
            "allow_private_addresses": True,
            "resolver": loopback,
            "verify": client_tls,
            "connect_timeout": HANG,
            "total_timeout": HANG,
            "check_timeout": HANG,
        }
        settings.update(options)
        return RetrievalPolicy(origins=origins, **settings)

    return make


def refused(retriever: Retriever, url: str) -> tuple[RetrievalError, float]:
    with Stopwatch() as watch, pytest.raises(RetrievalError) as info:
        retriever.fetch_json(url)
    return info.value, watch.elapsed


def expansion_refused(retriever: Retriever, document: Any) -> RetrievalError:
    with pytest.raises(ExpansionError) as info:
        expand(document, document_loader=retriever.document_loader)
    error = retrieval_error_in(info.value)
    assert error is not None, info.value
    return error


# Success, content types and the cache


def test_an_https_context_is_fetched_by_name_and_checked_address(https: LoopbackServer,
                                                                 policy: Policy) -> None:
    url = https.url("/ctx.jsonld")
    document, final_url, digest = Retriever(policy(https.origin())).fetch_json(url)
    assert (document, final_url, digest) == (CONTEXT, url, hashlib.sha256(CONTEXT_BYTES).hexdigest())
    assert https.requests == ["/ctx.jsonld"]


@pytest.mark.parametrize("content_type", [
    "application/ld+json; profile=\"http://www.w3.org/ns/json-ld#context\"; charset=utf-8",
    "APPLICATION/JSON",
])
def test_accepted_media_types_ignore_parameters_and_case(https: LoopbackServer, policy: Policy,
                                                         content_type: str) -> None:
    https.routes["/typed.jsonld"] = Reply(CONTEXT_BYTES, content_type=content_type)
    document, _, _ = Retriever(policy(https.origin())).fetch_json(https.url("/typed.jsonld"))
    assert document == CONTEXT


def test_plain_http_is_used_when_the_allow_list_names_it(http: LoopbackServer, policy: Policy) -> None:
    document, _, _ = Retriever(policy(http.origin())).fetch_json(http.url("/ctx.jsonld"))
    assert document == CONTEXT


def test_a_second_check_is_served_from_the_shared_cache(https: LoopbackServer, policy: Policy) -> None:
    cache = ResourceCache()
    rules = policy(https.origin())
    first = Retriever(rules, cache).fetch_json(https.url("/ctx.jsonld"))
    second_check = Retriever(rules, cache)
    assert second_check.fetch_json(https.url("/ctx.jsonld")) == first
    assert https.requests == ["/ctx.jsonld"]
    assert second_check.fetches == 1  # a cache hit still counts against the check's budget


def test_a_pinned_entry_is_served_only_for_the_same_pin(https: LoopbackServer, policy: Policy) -> None:
    cache = ResourceCache()
    url = https.url("/ctx.jsonld")
    pinned = policy(https.origin(), pins={url: hashlib.sha256(CONTEXT_BYTES).hexdigest()})
    Retriever(policy(https.origin()), cache).fetch_json(url)
    Retriever(pinned, cache).fetch_json(url)
    Retriever(pinned, cache).fetch_json(url)
    assert https.requests == ["/ctx.jsonld", "/ctx.jsonld"]


def test_a_cached_copy_is_held_to_the_policy_of_the_check(https: LoopbackServer, policy: Policy) -> None:
    cache = ResourceCache()
    https.routes["/via"] = redirect(https.url("/ctx.jsonld", host="other.test"))
    url = https.url("/via")
    Retriever(policy(https.origin(), https.origin("other.test")), cache).fetch_json(url)
    stricter = [
        (policy(https.origin()), "retrieval.redirect-refused"),
        (policy(https.origin(), https.origin("other.test"), max_redirects=0),
         "retrieval.too-many-redirects"),
        (policy(https.origin(), https.origin("other.test"), allow_private_addresses=False),
         "retrieval.private-address"),
        (policy(https.origin(), https.origin("other.test"), max_bytes=10), "retrieval.too-large"),
        (policy(https.origin(), https.origin("other.test"), accepted_types=frozenset({"application/json"})),
         "retrieval.content-type"),
    ]
    for rules, code in stricter:
        error, _ = refused(Retriever(rules, cache), url)
        assert error.code == code
    assert https.requests == ["/via", "/ctx.jsonld"]


def test_documents_handed_out_are_copies(https: LoopbackServer, policy: Policy) -> None:
    cache = ResourceCache()
    document, _, _ = Retriever(policy(https.origin()), cache).fetch_json(https.url("/ctx.jsonld"))
    document["@context"]["name"] = "changed"
    again, _, _ = Retriever(policy(https.origin()), cache).fetch_json(https.url("/ctx.jsonld"))
    assert again == CONTEXT


# Refusals of content


def test_a_pin_mismatch_is_refused(https: LoopbackServer, policy: Policy) -> None:
    url = https.url("/ctx.jsonld")
    error, _ = refused(Retriever(policy(https.origin(), pins={url: "0" * 64})), url)
    assert error.code == "retrieval.pin-mismatch"
    assert error.url == url


@pytest.mark.parametrize("reply", [
    Reply(b"<html></html>", content_type="text/html"),
    Reply(CONTEXT_BYTES, content_type=""),
    Reply(CONTEXT_BYTES, headers=(("Content-Encoding", "gzip"),)),
], ids=["html", "untyped", "gzip"])
def test_a_wrong_content_type_or_coding_is_refused(https: LoopbackServer, policy: Policy,
                                                   reply: Reply) -> None:
    https.routes["/wrong"] = reply
    error, _ = refused(Retriever(policy(https.origin())), https.url("/wrong"))
    assert error.code == "retrieval.content-type"


def test_http_404_is_refused(https: LoopbackServer, policy: Policy) -> None:
    error, _ = refused(Retriever(policy(https.origin())), https.url("/missing.jsonld"))
    assert error.code == "retrieval.http-status"
    assert "404" in error.message


@pytest.mark.parametrize("body", [b"{not json", b'{"a": 1, "a": 2}', b"[1, 2]", b'{"x": NaN}'])
def test_anything_but_one_strict_json_object_fails(https: LoopbackServer, policy: Policy,
                                                   body: bytes) -> None:
    https.routes["/bad.jsonld"] = Reply(body)
    error, _ = refused(Retriever(policy(https.origin())), https.url("/bad.jsonld"))
    assert error.code == "retrieval.failed"


# Redirects


def test_a_redirect_within_the_allow_list_is_followed(https: LoopbackServer, policy: Policy) -> None:
    https.routes["/old"] = redirect("/moved", 301)
    https.routes["/moved"] = redirect(https.url("/ctx.jsonld", host="other.test"), 307)
    rules = policy(https.origin(), https.origin("other.test"))
    document, final_url, _ = Retriever(rules).fetch_json(https.url("/old"))
    assert document == CONTEXT
    assert final_url == https.url("/ctx.jsonld", host="other.test")
    assert https.requests == ["/old", "/moved", "/ctx.jsonld"]


def test_a_redirect_to_a_disallowed_origin_is_refused_before_connecting(
        https: LoopbackServer, policy: Policy, sentinel: Sentinel) -> None:
    https.routes["/away"] = redirect(f"https://other.test:{sentinel.port}/ctx.jsonld")
    error, _ = refused(Retriever(policy(https.origin())), https.url("/away"))
    assert error.code == "retrieval.redirect-refused"
    assert https.requests == ["/away"]
    assert sentinel.pending() == 0


def test_a_redirect_to_another_scheme_is_refused(https: LoopbackServer, policy: Policy) -> None:
    https.routes["/downgrade"] = redirect(f"http://ctx.test:{https.port}/ctx.jsonld")
    error, _ = refused(Retriever(policy(https.origin())), https.url("/downgrade"))
    assert error.code == "retrieval.redirect-refused"


def test_a_redirect_chain_past_the_limit_is_refused(https: LoopbackServer, policy: Policy) -> None:
    for hop in range(5):
        https.routes[f"/r{hop}"] = redirect(f"/r{hop + 1}")
    error, _ = refused(Retriever(policy(https.origin(), max_redirects=2)), https.url("/r0"))
    assert error.code == "retrieval.too-many-redirects"
    assert https.requests == ["/r0", "/r1", "/r2"]


# Time and size budgets


def test_a_slow_drip_hits_the_total_time_budget(http: LoopbackServer, policy: Policy) -> None:
    http.routes["/drip"] = drip(interval=0.05)
    error, elapsed = refused(Retriever(policy(http.origin(), total_timeout=0.5)), http.url("/drip"))
    assert error.code == "retrieval.timeout"  # a budget per read would never fire on a drip
    assert elapsed > 0.4  # a lower bound only: a busy machine makes time longer, never shorter


def test_a_stalled_https_body_hits_the_total_time_budget(https: LoopbackServer, policy: Policy) -> None:
    https.routes["/stall"] = stall
    error, elapsed = refused(Retriever(policy(https.origin(), total_timeout=0.5)), https.url("/stall"))
    assert error.code == "retrieval.timeout"
    assert elapsed > 0.4  # a lower bound only: a busy machine makes time longer, never shorter


def test_a_slow_resolver_hits_the_connect_budget(https: LoopbackServer, policy: Policy) -> None:
    """The resolver answers only when released (or after a hang guard of 60 s, before the
    total budget of 120 s): the fetch fails with a timeout only if the connect budget covers
    the resolution; were it not, the resolver's late answer would be fetched."""
    release = threading.Event()

    def slow(host: str, port: int) -> list[str]:
        release.wait(60)
        return ["127.0.0.1"]

    try:
        error, _ = refused(Retriever(policy(https.origin(), resolver=slow, connect_timeout=0.3,
                                            total_timeout=120.0)), https.url("/ctx.jsonld"))
    finally:
        release.set()
    assert error.code == "retrieval.timeout"
    assert https.requests == []


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_an_endless_body_hits_the_byte_budget_and_the_connection_is_closed(
        server_tls: ssl.SSLContext, policy: Policy, scheme: str) -> None:
    with LoopbackServer({"/endless": endless()}, server_tls if scheme == "https" else None) as server:
        error, _ = refused(Retriever(policy(server.origin(), max_bytes=64 * 1024)),
                           server.url("/endless"))
    assert error.code == "retrieval.too-large"
    # Read after the server has joined its handler: the client hung up long before 64 MiB.
    assert "client hung up" in server.events
    assert "body completed" not in server.events


def test_a_declared_length_over_the_budget_is_refused_before_the_body(https: LoopbackServer,
                                                                      policy: Policy) -> None:
    https.routes["/big.jsonld"] = Reply(b'{"x": "' + b"a" * 100_000 + b'"}')
    error, _ = refused(Retriever(policy(https.origin(), max_bytes=1000)), https.url("/big.jsonld"))
    assert error.code == "retrieval.too-large"
    assert "declares" in error.message


# Reference depth, cycles and the fetch budget, through pyld


def test_remote_contexts_expand_through_the_loader_and_are_fetched_once(https: LoopbackServer,
                                                                         policy: Policy) -> None:
    https.routes["/outer.jsonld"] = Reply(json.dumps(
        {"@context": ["inner.jsonld", {"label": "http://www.w3.org/2000/01/rdf-schema#label"}]}).encode())
    https.routes["/inner.jsonld"] = Reply(CONTEXT_BYTES)
    retriever = Retriever(policy(https.origin()))
    document = {"@context": https.url("/outer.jsonld"), "@id": "http://example.org/x",
                "name": "n", "label": "l"}
    expansion = expand(document, document_loader=retriever.document_loader)
    expand(document, document_loader=retriever.document_loader)
    node = expansion.nodes[0]
    assert node["http://schema.org/name"] == [{"@value": "n"}]
    assert node["http://www.w3.org/2000/01/rdf-schema#label"] == [{"@value": "l"}]
    assert sorted(https.requests) == ["/inner.jsonld", "/outer.jsonld"]


def test_a_context_that_imports_itself_is_a_cycle(https: LoopbackServer, policy: Policy) -> None:
    url = https.url("/self.jsonld")
    https.routes["/self.jsonld"] = Reply(json.dumps(
        {"@context": {"@import": url, "name": "http://schema.org/name"}}).encode())
    error = expansion_refused(Retriever(policy(https.origin())), {"@context": url, "name": "x"})
    assert error.code == "retrieval.cycle"
    assert https.requests == ["/self.jsonld"]


def test_two_contexts_naming_each_other_are_a_cycle(https: LoopbackServer, policy: Policy) -> None:
    https.routes["/a.jsonld"] = Reply(b'{"@context": ["b.jsonld", {"name": "http://schema.org/name"}]}')
    https.routes["/b.jsonld"] = Reply(b'{"@context": {"@version": 1.1, "p": '
                                      b'{"@id": "http://example.org/p", "@context": "a.jsonld"}}}')
    error = expansion_refused(Retriever(policy(https.origin())),
                              {"@context": https.url("/a.jsonld"), "name": "x"})
    assert error.code == "retrieval.cycle"
    assert "a.jsonld -> " in error.message
    assert https.requests == ["/a.jsonld", "/b.jsonld"]


def test_a_chain_deeper_than_max_depth_is_refused_before_the_deepest_fetch(
        https: LoopbackServer, policy: Policy) -> None:
    for level in range(1, 5):
        https.routes[f"/c{level}.jsonld"] = Reply(json.dumps(
            {"@context": [f"c{level + 1}.jsonld", {"name": "http://schema.org/name"}]}).encode())
    error = expansion_refused(Retriever(policy(https.origin(), max_depth=3)),
                              {"@context": https.url("/c1.jsonld"), "name": "x"})
    assert error.code == "retrieval.too-deep"
    assert error.url.endswith("/c4.jsonld")
    assert https.requests == ["/c1.jsonld", "/c2.jsonld", "/c3.jsonld"]


def test_depth_is_checked_again_when_a_walked_context_is_met_deeper(https: LoopbackServer,
                                                                    policy: Policy) -> None:
    # leaf.jsonld is first met at level 1 and walked; met again at level 3 under mid.jsonld,
    # its own level would be 3 + 1 - 1 = 3 > 2.
    https.routes["/leaf.jsonld"] = Reply(b'{"@context": ["tip.jsonld"]}')
    https.routes["/tip.jsonld"] = Reply(CONTEXT_BYTES)
    https.routes["/top.jsonld"] = Reply(b'{"@context": ["mid.jsonld"]}')
    https.routes["/mid.jsonld"] = Reply(b'{"@context": ["leaf.jsonld"]}')
    retriever = Retriever(policy(https.origin(), max_depth=3))
    retriever.document_loader(https.url("/leaf.jsonld"), {})
    with pytest.raises(RetrievalError) as info:
        retriever.document_loader(https.url("/top.jsonld"), {})
    assert info.value.code == "retrieval.too-deep"


def test_the_fetch_budget_counts_every_resource_of_the_check(https: LoopbackServer, policy: Policy) -> None:
    https.routes["/many.jsonld"] = Reply(b'{"@context": ["x.jsonld", "y.jsonld"]}')
    https.routes["/x.jsonld"] = Reply(CONTEXT_BYTES)
    https.routes["/y.jsonld"] = Reply(CONTEXT_BYTES)
    error = expansion_refused(Retriever(policy(https.origin(), max_fetches=2)),
                              {"@context": https.url("/many.jsonld"), "name": "x"})
    assert error.code == "retrieval.budget"
    assert https.requests == ["/many.jsonld", "/x.jsonld"]


def test_failed_attempts_count_against_the_fetch_budget_and_refusals_do_not(
        https: LoopbackServer, policy: Policy) -> None:
    retriever = Retriever(policy(https.origin(), max_fetches=3))
    # Refused before any lookup: free, however many.
    for i in range(5):
        error, _ = refused(retriever, f"https://other.test:{https.port}/off{i}.jsonld")
        assert error.code == "retrieval.origin-not-allowed"
    codes = [refused(retriever, https.url(f"/missing{i}.jsonld"))[0].code for i in range(3)]
    assert codes == ["retrieval.http-status"] * 3
    # A URL that failed fails again from the check's memo, without another attempt.
    error, _ = refused(retriever, https.url("/missing0.jsonld"))
    assert error.code == "retrieval.http-status"
    error, _ = refused(retriever, https.url("/ctx.jsonld"))
    assert error.code == "retrieval.budget"
    assert "3 fetch attempts" in error.message
    assert retriever.fetches == 3
    assert https.requests == ["/missing0.jsonld", "/missing1.jsonld", "/missing2.jsonld"]


def test_an_address_refused_after_resolving_counts_as_an_attempt(sentinel: Sentinel,
                                                                 policy: Policy) -> None:
    origin = f"https://ctx.test:{sentinel.port}"
    retriever = Retriever(policy(origin, allow_private_addresses=False, max_fetches=2))
    codes = [refused(retriever, f"{origin}/c{i}.jsonld")[0].code for i in range(3)]
    assert codes == ["retrieval.private-address"] * 2 + ["retrieval.budget"]
    assert sentinel.pending() == 0


def test_the_check_deadline_cuts_a_fetch_short(https: LoopbackServer, policy: Policy) -> None:
    https.routes["/stall"] = stall
    retriever = Retriever(policy(https.origin(), total_timeout=2.0, check_timeout=0.5))
    error, elapsed = refused(retriever, https.url("/stall"))
    assert error.code == "retrieval.timeout"
    assert "the rest of the check's 0.5 s" in error.message
    assert elapsed > 0.4  # a lower bound only: a busy machine makes time longer, never shorter


def test_past_the_check_deadline_a_fetch_is_refused_at_once(https: LoopbackServer,
                                                            policy: Policy) -> None:
    """On a clock the server moves: each slow answer moves it past the deadline the test
    means to pass, then holds the response; the retriever's next read finds the deadline gone.
    With a real clock, the first fetch would have had to take under 0.2 s for the second's own
    deadline to come before the check's."""
    now = [0.0]

    def passing(to: float) -> Callable[[Any], None]:
        def serve(handler: Any) -> None:
            now[0] = to
            stall(handler)
        return serve

    # Fetches may take 100 s each, the check 150 s, on the test's clock (a hang guard too).
    https.routes["/late1"] = passing(101.0)  # past its own deadline, 100 s after it started
    https.routes["/late2"] = passing(151.0)  # past the check's, before its own (101 + 100 s)
    https.routes["/other.jsonld"] = Reply(CONTEXT_BYTES)
    retriever = Retriever(policy(https.origin(), total_timeout=100.0, check_timeout=150.0),
                          clock=lambda: now[0])
    retriever.fetch_json(https.url("/ctx.jsonld"))  # the first attempt starts the check's clock
    error, _ = refused(retriever, https.url("/late1"))
    assert error.code == "retrieval.timeout"
    assert "total 100.0 s" in error.message  # its own deadline came first
    error, _ = refused(retriever, https.url("/late2"))
    assert error.code == "retrieval.timeout"
    assert "the rest of the check's 150.0 s" in error.message  # cut short, not its own 100 s
    error, _ = refused(retriever, https.url("/other.jsonld"))
    assert error.code == "retrieval.timeout"
    assert "used its time budget of 150.0 s" in error.message
    # At once: refused without a request, as the server's log shows.
    assert https.requests == ["/ctx.jsonld", "/late1", "/late2"]
    # What the check already has is still served.
    document, _, _ = retriever.fetch_json(https.url("/ctx.jsonld"))
    assert document == CONTEXT


# Where connections may go


def test_a_name_resolving_to_loopback_is_refused_before_any_byte(sentinel: Sentinel, policy: Policy) -> None:
    origin = f"https://ctx.test:{sentinel.port}"
    error, _ = refused(Retriever(policy(origin, allow_private_addresses=False)), f"{origin}/ctx.jsonld")
    assert error.code == "retrieval.private-address"
    assert "127.0.0.1" in error.message
    assert sentinel.pending() == 0


def test_an_ipv4_mapped_ipv6_literal_is_refused(sentinel: Sentinel, policy: Policy) -> None:
    origin = f"https://[::ffff:127.0.0.1]:{sentinel.port}"
    error, _ = refused(Retriever(policy(origin, allow_private_addresses=False)), f"{origin}/ctx.jsonld")
    assert error.code == "retrieval.private-address"
    assert sentinel.pending() == 0


def test_one_private_address_among_public_ones_refuses_the_name(sentinel: Sentinel, policy: Policy) -> None:
    def mixed(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "::ffff:127.0.0.1"]

    origin = f"https://ctx.test:{sentinel.port}"
    rules = policy(origin, allow_private_addresses=False, resolver=mixed)
    error, _ = refused(Retriever(rules), f"{origin}/ctx.jsonld")
    assert error.code == "retrieval.private-address"
    assert sentinel.pending() == 0


def test_an_origin_not_on_the_allow_list_is_refused_with_no_lookup_or_connection(
        sentinel: Sentinel, policy: Policy) -> None:
    lookups: list[str] = []

    def counting(host: str, port: int) -> list[str]:
        lookups.append(host)
        return ["127.0.0.1"]

    rules = policy(f"https://other.test:{sentinel.port}", resolver=counting)
    error, _ = refused(Retriever(rules), f"https://ctx.test:{sentinel.port}/ctx.jsonld")
    assert error.code == "retrieval.origin-not-allowed"
    assert lookups == []
    assert sentinel.pending() == 0


@pytest.mark.parametrize("url", [
    "http://ctx.test:{port}/ctx.jsonld",  # https is named, http is not
    "https://ctx.test:{other}/ctx.jsonld",  # another port
    "file:///etc/passwd",
    "https://user:secret@ctx.test:{port}/ctx.jsonld",
])
def test_what_the_allow_list_does_not_name_is_refused(https: LoopbackServer, policy: Policy,
                                                      url: str) -> None:
    target = url.format(port=https.port, other=https.port + 1)
    error, _ = refused(Retriever(policy(https.origin())), target)
    assert error.code == "retrieval.origin-not-allowed"
    assert https.connections == 0


def test_retrieval_is_off_without_an_allow_list(https: LoopbackServer, policy: Policy) -> None:
    error, _ = refused(Retriever(policy()), https.url("/ctx.jsonld"))
    assert error.code == "retrieval.prohibited"
    assert https.connections == 0


def test_resolution_happens_once_per_connection(https: LoopbackServer, policy: Policy) -> None:
    lookups: list[str] = []

    def counting(host: str, port: int) -> list[str]:
        lookups.append(host)
        return ["127.0.0.1"]

    Retriever(policy(https.origin(), resolver=counting)).fetch_json(https.url("/ctx.jsonld"))
    assert lookups == ["ctx.test"]


# Failures of the connection


def test_tls_is_verified_against_the_url_host_name(https: LoopbackServer, policy: Policy) -> None:
    error, _ = refused(Retriever(policy(https.origin("wrong.test"))), https.url("/ctx.jsonld", "wrong.test"))
    assert error.code == "retrieval.failed"
    assert "certificate" in error.message.lower()


def test_an_untrusted_certificate_fails(https: LoopbackServer, policy: Policy) -> None:
    error, _ = refused(Retriever(policy(https.origin(), verify=ssl.create_default_context())),
                       https.url("/ctx.jsonld"))
    assert error.code == "retrieval.failed"


def test_a_ca_bundle_path_is_trusted_and_the_system_store_is_the_default(
        https: LoopbackServer, policy: Policy, ca: Any, tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    trusting = Retriever(policy(https.origin(), verify=str(bundle)))
    document, _, _ = trusting.fetch_json(https.url("/ctx.jsonld"))
    assert document == CONTEXT
    error, _ = refused(Retriever(policy(https.origin(), verify=None)), https.url("/ctx.jsonld"))
    assert error.code == "retrieval.failed"


def test_a_refused_connection_fails(policy: Policy) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        origin = f"https://ctx.test:{unused.getsockname()[1]}"
        error, _ = refused(Retriever(policy(origin)), f"{origin}/ctx.jsonld")
    assert error.code == "retrieval.failed"


def test_a_name_that_does_not_resolve_fails(https: LoopbackServer, policy: Policy) -> None:
    origin = f"https://nowhere.test:{https.port}"
    error, _ = refused(Retriever(policy(origin)), f"{origin}/ctx.jsonld")
    assert error.code == "retrieval.failed"
    assert https.connections == 0


# The pieces on their own


@pytest.mark.parametrize(("address", "public"), [
    ("93.184.216.34", True),
    ("2606:4700::1", True),
    ("::ffff:93.184.216.34", True),
    ("127.0.0.1", False),
    ("10.1.2.3", False),
    ("172.16.0.1", False),
    ("192.168.1.1", False),
    ("100.64.0.1", False),
    ("169.254.169.254", False),
    ("224.0.0.1", False),
    ("0.0.0.0", False),
    ("240.0.0.1", False),
    ("255.255.255.255", False),
    ("::1", False),
    ("::", False),
    ("fe80::1", False),
    ("fc00::1", False),
    ("fec0::1", False),
    ("ff02::1", False),
    ("::ffff:127.0.0.1", False),
    ("::ffff:10.0.0.1", False),
    ("2002:7f00:1::", False),
    ("64:ff9b::7f00:1", False),
])
def test_which_addresses_are_public(address: str, public: bool) -> None:
    assert is_public_address(address) is public


@pytest.mark.parametrize("text", ["example.org", "ftp://example.org", "https://example.org/path",
                                  "https://u:p@example.org", "https://"])
def test_an_origin_is_scheme_host_and_port_only(text: str) -> None:
    with pytest.raises(ValueError):
        Origin.parse(text)


def test_origins_default_their_port_by_scheme() -> None:
    assert Origin.parse("https://Example.ORG") == ("https", "example.org", 443)
    assert Origin.parse("http://localhost:8080/") == ("http", "localhost", 8080)
    policy = RetrievalPolicy(origins=("https://example.org",))
    assert policy.allowed_origins == {Origin("https", "example.org", 443)}


def test_a_pin_must_be_a_sha256_digest() -> None:
    with pytest.raises(ValueError):
        RetrievalPolicy(pins={"https://example.org/c": "abc"})


@pytest.mark.parametrize("budget", ["total_timeout", "check_timeout", "max_fetches"])
def test_a_budget_must_be_positive(budget: str) -> None:
    assert RetrievalPolicy().check_timeout == 10.0
    zero: dict[str, Any] = {budget: 0}
    with pytest.raises(ValueError, match=budget):
        RetrievalPolicy(**zero)


def resource(size: int, name: str = "x") -> Resource:
    return Resource({"name": name}, f"https://example.org/{name}", "0" * 64, size, "application/json", 0)


def test_the_cache_drops_the_least_recently_used_by_count_and_by_bytes() -> None:
    cache = ResourceCache(max_entries=2, max_bytes=100)
    cache.put("a", None, resource(10))
    cache.put("b", None, resource(10))
    assert cache.get("a", None) is not None  # b is now the least recently used
    cache.put("c", None, resource(10))
    assert (cache.get("a", None), cache.get("b", None)) != (None, None)
    assert cache.get("b", None) is None
    cache.put("d", None, resource(95))
    assert len(cache) == 1 and cache.size == 95
    cache.put("huge", None, resource(101))
    assert cache.get("huge", None) is None


def test_the_cache_keys_by_pin_and_expires() -> None:
    now = [0.0]
    cache = ResourceCache(ttl=10, clock=lambda: now[0])
    cache.put("a", "1" * 64, resource(1))
    assert cache.get("a", None) is None
    assert cache.get("a", "2" * 64) is None
    assert cache.get("a", "1" * 64) is not None
    now[0] = 11
    assert cache.get("a", "1" * 64) is None
    assert len(cache) == 0


def test_the_cache_is_thread_safe() -> None:
    cache = ResourceCache(max_entries=50, max_bytes=10_000)
    failures: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(500):
                cache.put(f"u{(worker * 7 + i) % 80}", None, resource(1 + i % 50))
                cache.get(f"u{i % 80}", None)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HANG)
    assert not failures and not any(thread.is_alive() for thread in threads)
    assert len(cache) <= 50 and cache.size <= 10_000


def test_retrieval_error_in_follows_causes_and_pyld_details() -> None:
    inner = RetrievalError("retrieval.cycle", "https://example.org/a", "cycle")

    class JsonLdLike(Exception):
        def __init__(self, details: dict[str, Any]) -> None:
            super().__init__("wrapped")
            self.details = details

    try:
        try:
            raise JsonLdLike({"cause": inner})
        except JsonLdLike as exc:
            raise ValueError("outer") from exc
    except ValueError as outer:
        assert retrieval_error_in(outer) is inner
    assert retrieval_error_in(ValueError("nothing")) is None


def test_every_code_raised_is_listed_and_every_listed_code_is_tested() -> None:
    listed = {code for code, _ in RETRIEVAL_CODES}
    assert all(code.startswith("retrieval.") and meaning for code, meaning in RETRIEVAL_CODES)
    module = Path(__file__).resolve().parents[1] / "ioa_semantic" / "sources" / "retrieval.py"
    raised = set(re.findall(r'RetrievalError\(\s*"(retrieval\.[a-z-]+)"', module.read_text()))
    assert raised == listed
    asserted = set(re.findall(r'code == "(retrieval\.[a-z-]+)"', Path(__file__).read_text()))
    assert asserted == listed
