"""Retrieval: remote JSON-LD contexts and documents, fetched only as far as a policy allows.

Remote retrieval is off unless a profile or an option turns it on (contract section 4). When it
is on, the draft's 6.1 asks for trusted sources, time and size budgets, a maximum reference
depth, cycle and redirect handling, a way to identify the accepted revision, and protection
against server-side request forgery and resource exhaustion. This module is all of that and
nothing else: a :class:`RetrievalPolicy` (what may be fetched), a :class:`Retriever` (one per
check: the fetches of that check and the chain of references being followed), and a
:class:`ResourceCache` shared between checks. Every failure is a :class:`RetrievalError`
with a ``retrieval.*`` code; httpx, httpcore, ssl, socket and JSON errors are mapped to one at
a single boundary (:meth:`Retriever._download`), so a check turns any of them into an
``indeterminate`` reason and never crashes.

Where a connection goes. Every TCP connection is opened by :class:`_GuardedBackend`, an
httpcore network backend: it resolves the host once with the policy's resolver, refuses the
connection if *any* resolved address is not public (a name that mixes public and private
addresses is how rebinding attacks are staged, so picking the good ones would still be a
gamble), and then connects to the very IP literal it checked. There is no second lookup, so
a DNS answer that changes between check and connect cannot redirect the connection. TLS is
still verified against the URL's host name: httpcore calls ``start_tls`` with the origin's
host as ``server_hostname`` after ``connect_tcp`` returns, whatever address the backend
connected to. The origin allow-list is checked before a request is built, for the first URL
and for every redirect target, so a refused origin or address never receives a byte.

Time. Each fetch (all its redirects and the whole body) has one deadline. Every socket read
and write is given at most the time left (:class:`_DeadlineStream`), so a server that drips
a byte at a time is cut off at the deadline, not when it pleases. Name resolution runs in a
worker thread bounded by the connect timeout, because ``getaddrinfo`` has no timeout of its
own. A check has one deadline too, ``check_timeout`` after its first fetch starts: a fetch's
deadline is the earlier of its own and the check's, and once the check's has passed every
further fetch is refused at once (``retrieval.timeout``) while what was already loaded is
still served from the check's memo.

Budget. Every fetch attempt of a check counts against ``max_fetches``, whether it succeeds,
fails, times out or is refused once its host has been resolved; a URL that failed is not
attempted again in the same check. What :meth:`Retriever._admit` refuses (retrieval off, an
origin off the allow-list, credentials in the URL, a spent budget or deadline) sends nothing
and costs nothing, so it does not count. The worst case of one check is therefore
``max_fetches`` attempts (each at most ``max_redirects + 1`` requests and one body of at
most ``max_bytes``), all of them within ``check_timeout`` of the first (and, each within
``total_timeout``, within ``max_fetches * total_timeout`` as well).

Depth and cycles with pyld. pyld asks its document loader for one URL at a time and looks at
what a fetched context names only after the loader has returned; the chain of contexts that
led to a request lives in pyld's own ``cycles`` set, which a loader never sees. So from inside
a loader call the nesting is not observable, and pyld's own guards (a 10-URL cap and a
``context overflow`` error) are not ours to configure. The retriever therefore does not wait
for pyld: the first time pyld asks for a URL in a check, :meth:`Retriever.document_loader`
loads that resource and, depth first, every context it names (``@context`` values and
``@import``, at any nesting, resolved against the resource's final URL as pyld resolves
them), carrying the chain of URLs explicitly. A URL already on the chain (requested or
reached by redirect) is a cycle (``retrieval.cycle``); a load below ``max_depth`` levels is
refused before it is fetched (``retrieval.too-deep``). The document being checked is level 0
and a context it names is level 1. A fully walked URL is remembered with the height of what
lies below it, so meeting it again on another path costs nothing and still checks depth. When
pyld then asks for the nested URLs they come from the check's memo. A URL pyld asks for that
no walked resource names is taken as named by the document itself (level 1).

Limits of that approach: the walk follows JSON-LD syntax, not pyld's processing, so it also
loads what pyld would skip (a scoped context of a term that is never used; pyld pre-loads
those too), and that costs fetches from the budget. pyld resolves ``@import`` against the
expansion base rather than against the importing context; the walk resolves it against the
context (as JSON-LD 1.1 says), so for a relative ``@import`` pyld asks for another URL, which
is then treated as level 1 (and is refused when it is not an absolute http(s) URL). An
imported context cannot itself import (pyld refuses), so this can understate depth by one at
most. Fetch counts are per distinct URL per check, whether the bytes came from the network or
the cache, so a check decides the same with a cold or a warm cache (the deadline aside: a
warm cache is faster).
"""

from __future__ import annotations

import copy
import hashlib
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, NamedTuple

import httpcore
import httpx
from cachetools import TTLCache
from pyld import iri_resolver

from .._codes import CODES
from .._exceptions import RetrievalError
from .._version import __version__
from ..pipeline.intake import Limits, parse

# Every code this module raises, with its meaning; the registry in _codes is the one source.
RETRIEVAL_CODES: tuple[tuple[str, str], ...] = tuple(
    (entry.code, entry.meaning) for entry in CODES.values() if entry.family == "retrieval")

DEFAULT_ACCEPTED_TYPES = frozenset({"application/ld+json", "application/json"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_USER_AGENT = f"ioa-semantic/{__version__}"


class Origin(NamedTuple):
    """An origin of the allow-list: scheme, host (ASCII, lower case) and port."""

    scheme: str
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Origin:
        """``"https://example.org"`` or ``"http://localhost:8080"``; the port defaults by scheme."""
        try:
            url = httpx.URL(text)
        except (httpx.InvalidURL, ValueError) as exc:
            raise ValueError(f"not an origin: {text!r} ({exc})") from None
        if url.scheme not in _DEFAULT_PORTS or not url.raw_host:
            raise ValueError(f"not an http or https origin: {text!r}")
        if url.userinfo or url.query or url.fragment or url.path not in ("", "/"):
            raise ValueError(f"an origin is scheme, host and port only: {text!r}")
        return cls.of(url)

    @classmethod
    def of(cls, url: httpx.URL) -> Origin:
        return cls(url.scheme, url.raw_host.decode("ascii").lower(),
                   url.port or _DEFAULT_PORTS.get(url.scheme, 0))

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class RetrievalPolicy:
    """What a check may fetch, from where, and how much.

    ``origins`` is the allow-list; an empty one means retrieval is off. Only the schemes the
    origins name are used, so an ``https`` allow-list never fetches over plain ``http``.
    ``pins`` maps a URL (without fragment) to the sha256 hex digest its body must have.
    ``resolver(host, port)`` returns IP address strings (default: ``socket.getaddrinfo``).
    ``verify`` is an ``ssl.SSLContext`` or a CA bundle path; ``None`` trusts the system store.

    Budgets of one check: at most ``max_fetches`` fetch attempts (failed ones included), each
    within ``total_timeout`` seconds (``connect_timeout`` to connect), all of them within
    ``check_timeout`` seconds of the first, and at most ``max_bytes`` per body.
    """

    origins: tuple[str, ...] = ()
    allow_private_addresses: bool = False
    connect_timeout: float = 2.0
    total_timeout: float = 5.0
    check_timeout: float = 10.0
    max_bytes: int = 1 << 20
    max_redirects: int = 3
    max_depth: int = 4
    max_fetches: int = 16
    pins: Mapping[str, str] = field(default_factory=dict, hash=False)
    accepted_types: frozenset[str] = DEFAULT_ACCEPTED_TYPES
    resolver: Callable[[str, int], Sequence[str]] | None = None
    verify: ssl.SSLContext | str | None = None
    allowed_origins: frozenset[Origin] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        # Normalised once here so that the policy cannot change after a check has read it.
        object.__setattr__(self, "origins", tuple(self.origins))
        object.__setattr__(self, "allowed_origins", frozenset(Origin.parse(o) for o in self.origins))
        pins = {url: digest.lower() for url, digest in self.pins.items()}
        for url, digest in pins.items():
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                raise ValueError(f"the pin for {url!r} is not a sha256 hex digest")
        object.__setattr__(self, "pins", MappingProxyType(pins))
        object.__setattr__(self, "accepted_types",
                           frozenset(t.strip().lower() for t in self.accepted_types))
        for name in ("connect_timeout", "total_timeout", "check_timeout", "max_bytes", "max_depth",
                     "max_fetches"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if self.max_redirects < 0:
            raise ValueError("max_redirects must not be negative")

    def allows(self, url: httpx.URL) -> bool:
        return not url.userinfo and Origin.of(url) in self.allowed_origins


def is_public_address(address: str) -> bool:
    """Whether an IP address may be connected to when private addresses are not allowed.

    Loopback, private, shared (100.64/10), link-local, site-local, multicast, unspecified and
    reserved addresses are not; an IPv4 address embedded in IPv6 (``::ffff:a.b.c.d``, 6to4)
    is judged as the IPv4 address it reaches.
    """
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return is_public_address(str(ip.ipv4_mapped))
        if ip.sixtofour is not None and not is_public_address(str(ip.sixtofour)):
            return False
        if ip.is_site_local:
            return False
    return ip.is_global and not (
        ip.is_multicast or ip.is_private or ip.is_loopback or ip.is_link_local
        or ip.is_unspecified or ip.is_reserved)


@dataclass(frozen=True, slots=True)
class Resource:
    """One retrieved JSON document. ``document`` is shared: read it, copy it, never change it."""

    document: Any
    final_url: str
    sha256: str
    size: int
    content_type: str
    redirects: int
    private_address: bool = False
    body: bytes | None = None  # kept only for resources fetched as bytes (a Turtle profile)


class ResourceCache:
    """Retrieved documents shared between checks: thread-safe, least recently used first out.

    Keyed by (URL, pin), so an entry fetched under one pin (or none) is never served for
    another. Bounded by entry count and by the bytes of the bodies; entries expire after
    ``ttl`` seconds so that an unpinned context is eventually fetched again. Failures are not
    cached. Two checks that miss at the same time both fetch.

    The map, its expiry and its eviction by bytes are cachetools' ``TTLCache`` (least
    recently used first); the entry count is bounded here. cachetools is not thread-safe,
    and a lookup reorders the entries, so every operation takes the lock.
    """

    def __init__(
        self,
        max_entries: int = 256,
        max_bytes: int = 16 << 20,
        ttl: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.ttl = ttl
        self._lock = threading.Lock()
        # (url, pin) -> Resource, each weighing its body's bytes
        self._entries: Any = TTLCache(max_bytes, ttl, timer=clock, getsizeof=_body_bytes)

    def get(self, url: str, pin: str | None) -> Resource | None:
        with self._lock:
            self._entries.expire()  # an expired entry is dropped, not only passed over
            resource: Resource | None = self._entries.get((url, pin))
            return resource

    def put(self, url: str, pin: str | None, resource: Resource) -> None:
        if resource.size > self.max_bytes:
            return
        with self._lock:
            # The old entry goes first: what the new one makes room for is counted without it.
            self._entries.pop((url, pin), None)
            self._entries[(url, pin)] = resource
            while len(self._entries) > self.max_entries:
                self._entries.popitem()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            self._entries.expire()
            return len(self._entries)

    @property
    def size(self) -> int:
        """Bytes of the cached bodies."""
        with self._lock:
            self._entries.expire()
            return int(self._entries.currsize)


def _body_bytes(resource: Resource) -> int:
    """What a cached resource weighs: its body's bytes."""
    return resource.size


class Retriever:
    """The retrievals of one check, under one policy. Not for use from several threads.

    ``fetch_json`` fetches one resource; ``document_loader`` is pyld's ``documentLoader``
    and also follows what each context names (see the module docstring).

    The budgets are this object's state, so one retriever is one check: every attempt counts
    against ``max_fetches`` whether it succeeds or not, and the check's deadline starts with
    its first attempt.

    ``clock`` (seconds, monotonic) is what every deadline is read from, the fetch's and the
    check's, down to the time each socket read is given; a test passes one it moves itself,
    so which deadline cut a fetch short does not depend on how fast the machine is.
    """

    def __init__(self, policy: RetrievalPolicy, cache: ResourceCache | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy
        self.cache = cache if cache is not None else ResourceCache()
        self._clock = clock
        self._loaded: dict[str, Resource] = {}
        # A URL that failed once fails again in this check without a second attempt.
        self._failed: dict[str, RetrievalError] = {}
        self._heights: dict[str, int] = {}
        self._attempts = 0
        self._deadline: float | None = None  # the check's, set by its first attempt
        self._tls: ssl.SSLContext | None = None

    @property
    def fetches(self) -> int:
        """Fetch attempts of this check, failed or not, from the network or the cache."""
        return self._attempts

    def fetch_json(self, url: str) -> tuple[Any, str, str]:
        """``(document, final_url, sha256)`` of the JSON object at ``url``."""
        resource = self._load(_without_fragment(url))
        return copy.deepcopy(resource.document), resource.final_url, resource.sha256

    def fetch_bytes(self, url: str, accepted_types: frozenset[str]) -> tuple[bytes, str, str]:
        """``(body, final_url, sha256)`` of a resource that is not JSON (a Turtle profile).

        Held to the same allow-list, addresses, budgets and pins as JSON, but with its own
        media types; it is not cached, since it is read once when a checker is built.
        """
        target = _without_fragment(url)
        self._admit(target)
        self._attempt()
        resource = self._download(target, self.policy.pins.get(target), accepted_types)
        self._loaded[target] = resource
        assert resource.body is not None
        return resource.body, resource.final_url, resource.sha256

    @property
    def retrieved(self) -> tuple[tuple[str, str, str], ...]:
        """``(url, final_url, sha256)`` of every resource this check used, in URL order."""
        return tuple((url, r.final_url, r.sha256) for url, r in sorted(self._loaded.items()))

    def document_loader(self, url: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """pyld's loader contract: a remote document, or an exception pyld wraps."""
        target = _without_fragment(url)
        self._walk(target, ())
        resource = self._loaded[target]
        # pyld edits the documents it is given (it resolves URLs in place, merges @import),
        # so it gets its own copy. No "tag": pyld would then keep the context in its
        # process-wide cache, where no later policy would be asked again.
        return {
            "contextUrl": None,
            "documentUrl": resource.final_url,
            "document": copy.deepcopy(resource.document),
            "contentType": resource.content_type,
        }

    def _walk(self, url: str, chain: tuple[str, ...]) -> int:
        """Load ``url`` and everything it names; the height of that tree in levels."""
        level = len(chain) + 1
        if url in chain or any(self._loaded[u].final_url == url for u in chain):
            loop = chain[chain.index(url):] if url in chain else chain
            path = " -> ".join((*loop, url))
            raise RetrievalError("retrieval.cycle", url, f"contexts name each other in a cycle: {path}")
        if url in self._heights:
            height = self._heights[url]
            if level + height - 1 > self.policy.max_depth:
                raise RetrievalError(
                    "retrieval.too-deep", url,
                    f"{url} is named at level {level} and names contexts down to level "
                    f"{level + height - 1}, beyond the depth limit of {self.policy.max_depth}")
            return height
        if level > self.policy.max_depth:
            raise RetrievalError(
                "retrieval.too-deep", url,
                f"{url} is named at level {level} ({' -> '.join(chain)}), beyond the depth limit "
                f"of {self.policy.max_depth}")
        resource = self._load(url)
        height = 1
        for reference in _references(resource.document):
            try:
                named = _without_fragment(iri_resolver.resolve(reference, resource.final_url))
            except ValueError as exc:
                raise RetrievalError("retrieval.failed", url,
                                     f"{url} names {reference!r}, which is not a URL: {exc}") from exc
            height = max(height, 1 + self._walk(named, (*chain, url)))
        self._heights[url] = height
        return height

    def _load(self, url: str) -> Resource:
        if url in self._loaded:
            return self._loaded[url]
        if url in self._failed:
            earlier = self._failed[url]
            raise RetrievalError(earlier.code, url, earlier.message)
        self._admit(url)
        self._attempt()
        pin = self.policy.pins.get(url)
        try:
            resource = self.cache.get(url, pin)
            if resource is None:
                resource = self._download(url, pin)
                self.cache.put(url, pin, resource)
            else:
                self._judge_cached(url, resource)
        except RetrievalError as exc:
            self._failed[url] = exc
            raise
        self._loaded[url] = resource
        return resource

    def _attempt(self) -> None:
        """Count an admitted fetch against the budget; the first one starts the check's clock."""
        self._attempts += 1
        if self._deadline is None:
            self._deadline = self._clock() + self.policy.check_timeout

    def _admit(self, url: str) -> None:
        """Refuse before any lookup or connection: retrieval off, origin, credentials, budgets.

        These refusals cost nothing and do not count as attempts; what passes here counts,
        however it ends (an address refused after resolving the name included, since the
        lookup is itself traffic and time).
        """
        policy = self.policy
        if not policy.allowed_origins:
            raise RetrievalError("retrieval.prohibited", url,
                                 f"{url} is not retrieved: remote retrieval is off by policy")
        target = _parse_url(url)
        if target.userinfo:
            raise RetrievalError("retrieval.origin-not-allowed", url,
                                 f"{url} is not retrieved: a URL with credentials is never fetched")
        if not policy.allows(target):
            raise RetrievalError(
                "retrieval.origin-not-allowed", url,
                f"{url} is not retrieved: its origin is not on the allow-list "
                f"({', '.join(sorted(policy.origins))})")
        if self._attempts >= policy.max_fetches:
            raise RetrievalError("retrieval.budget", url,
                                 f"{url} is not retrieved: the check has used its budget of "
                                 f"{policy.max_fetches} fetch attempts")
        if self._deadline is not None and self._clock() >= self._deadline:
            raise RetrievalError("retrieval.timeout", url,
                                 f"{url} is not retrieved: the check has used its time budget "
                                 f"of {policy.check_timeout} s")

    def _judge_cached(self, url: str, resource: Resource) -> None:
        """Hold a cached resource to this policy: the cache may have been filled under another.

        Only what the resource records can be judged again; its addresses are not resolved
        anew, so a cached resource is served even if its host's address has changed since.
        """
        policy = self.policy
        if resource.redirects > policy.max_redirects:
            raise RetrievalError("retrieval.too-many-redirects", url,
                                 f"{url} is behind {resource.redirects} redirects, over the limit "
                                 f"of {policy.max_redirects}")
        if not policy.allows(_parse_url(resource.final_url)):
            raise RetrievalError("retrieval.redirect-refused", url,
                                 f"{url} redirects to {resource.final_url}, whose origin is not "
                                 "on the allow-list")
        if resource.private_address and not policy.allow_private_addresses:
            raise RetrievalError("retrieval.private-address", url,
                                 f"{url} was retrieved from an address that is not public")
        if resource.content_type not in policy.accepted_types:
            raise RetrievalError("retrieval.content-type", url,
                                 f"{resource.final_url} is {resource.content_type}, not one of "
                                 f"{', '.join(sorted(policy.accepted_types))}")
        if resource.size > policy.max_bytes:
            raise RetrievalError("retrieval.too-large", url,
                                 f"{resource.final_url} has {resource.size} bytes, over the limit "
                                 f"of {policy.max_bytes}")

    def _download(self, url: str, pin: str | None,
                  raw_types: frozenset[str] | None = None) -> Resource:
        """The one place where foreign errors become retrieval reasons."""
        # The fetch's own deadline, or the check's if that comes first.
        own = self._clock() + self.policy.total_timeout
        deadline = own if self._deadline is None else min(own, self._deadline)
        try:
            return self._exchange(url, pin, raw_types, deadline)
        except RetrievalError:
            raise
        except _AddressRefused as exc:
            raise RetrievalError("retrieval.private-address", url,
                                 f"{url} is not retrieved: {exc}") from exc
        except (httpx.TimeoutException, httpcore.TimeoutException, TimeoutError) as exc:
            budget = (f"the rest of the check's {self.policy.check_timeout} s" if deadline < own
                      else f"total {self.policy.total_timeout} s")
            raise RetrievalError("retrieval.timeout", url,
                                 f"{url} was not retrieved in time (connect {self.policy.connect_timeout} s, "
                                 f"{budget}): {_describe(exc)}") from exc
        except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError, httpcore.ConnectionNotAvailable,
                httpcore.ProxyError, httpcore.UnsupportedProtocol, httpcore.ProtocolError,
                httpcore.NetworkError, OSError, ValueError) as exc:
            # OSError covers ssl.SSLError, socket errors and a failing resolver; ValueError
            # covers ssl.CertificateError and bad host names (UnicodeError).
            raise RetrievalError("retrieval.failed", url,
                                 f"{url} could not be retrieved: {_describe(exc)}") from exc

    def _exchange(self, url: str, pin: str | None, raw_types: frozenset[str] | None,
                  deadline: float) -> Resource:
        policy = self.policy
        accepted_types = raw_types or policy.accepted_types
        backend = _GuardedBackend(policy, deadline, self._clock)
        transport = _GuardedTransport(self._tls_context(), backend)
        headers = {
            "Accept": ", ".join(sorted(accepted_types)),
            # A compressed body would be counted compressed and could inflate without bound.
            "Accept-Encoding": "identity",
            "User-Agent": _USER_AGENT,
        }
        # One client per fetch: its connections live exactly as long as the fetch's deadline,
        # and trust_env=False keeps proxies and .netrc out of the path the backend guards.
        with httpx.Client(transport=transport, headers=headers, follow_redirects=False,
                          trust_env=False) as client:
            current = _parse_url(url)
            for hop in range(policy.max_redirects + 1):
                if hop and not policy.allows(current):
                    raise RetrievalError("retrieval.redirect-refused", url,
                                         f"{url} redirects to {current}, whose origin is not on "
                                         "the allow-list")
                timeout = _timeout(policy, deadline, self._clock)
                with client.stream("GET", current, timeout=timeout) as response:
                    if response.has_redirect_location:
                        current = current.join(response.headers["Location"])
                        continue
                    accepted = self._accept(url, pin, current, hop, response, raw_types)
                    return replace(accepted, private_address=backend.reached_private)
        raise RetrievalError("retrieval.too-many-redirects", url,
                             f"{url} is behind more than {policy.max_redirects} redirects")

    def _accept(self, url: str, pin: str | None, final: httpx.URL, redirects: int,
                response: httpx.Response, raw_types: frozenset[str] | None = None) -> Resource:
        policy = self.policy
        accepted_types = raw_types or policy.accepted_types
        if response.status_code != 200:
            raise RetrievalError("retrieval.http-status", url,
                                 f"{final} answered {response.status_code} {response.reason_phrase}")
        media_type = response.headers.get("Content-Type", "").partition(";")[0].strip().lower()
        if media_type not in accepted_types:
            raise RetrievalError("retrieval.content-type", url,
                                 f"{final} is {media_type or 'untyped'}, not one of "
                                 f"{', '.join(sorted(accepted_types))}")
        coding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if coding not in ("", "identity"):
            raise RetrievalError("retrieval.content-type", url,
                                 f"{final} is sent with content coding {coding!r}; only identity "
                                 "is accepted")
        declared = response.headers.get("Content-Length", "").strip()
        if declared.isdigit() and int(declared) > policy.max_bytes:
            raise RetrievalError("retrieval.too-large", url,
                                 f"{final} declares {declared} bytes, over the limit of "
                                 f"{policy.max_bytes}")
        body = bytearray()
        for chunk in response.iter_raw():
            body += chunk
            if len(body) > policy.max_bytes:
                raise RetrievalError("retrieval.too-large", url,
                                     f"{final} sent more than {policy.max_bytes} bytes")
        digest = hashlib.sha256(body).hexdigest()
        if pin is not None and digest != pin:
            raise RetrievalError("retrieval.pin-mismatch", url,
                                 f"{final} has sha256 {digest}, not the pinned {pin}")
        if raw_types is not None:
            return Resource(None, str(final), digest, len(body), media_type, redirects,
                            body=bytes(body))
        intake = parse(bytes(body), Limits(max_bytes=policy.max_bytes))
        if not intake.ok:
            problem = intake.findings[0]
            raise RetrievalError("retrieval.failed", url,
                                 f"{final} is not one strict JSON object: {problem.message} "
                                 f"({problem.code})")
        return Resource(intake.document, str(final), digest, len(body), media_type, redirects)

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            verify = self.policy.verify
            if isinstance(verify, ssl.SSLContext):
                self._tls = verify
            else:
                self._tls = ssl.create_default_context(cafile=verify)
        return self._tls


def _references(document: Any) -> list[str]:
    """Every context URL a JSON-LD document names, in document order, each once.

    ``@context`` values (a string or the strings of an array) and ``@import``, at any depth,
    so that scoped contexts in term definitions are found too; ``@value`` and ``@json``
    contents are data, not JSON-LD.
    """
    found: dict[str, None] = {}
    stack: list[Any] = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "@context":
                    for entry in item if isinstance(item, list) else [item]:
                        if isinstance(entry, str):
                            found.setdefault(entry)
                elif key == "@import" and isinstance(item, str):
                    found.setdefault(item)
            stack.extend(reversed([v for k, v in value.items() if k not in ("@value", "@json")]))
        elif isinstance(value, list):
            stack.extend(reversed(value))
    return list(found)


def _without_fragment(url: str) -> str:
    return url.partition("#")[0]


def _parse_url(url: str) -> httpx.URL:
    try:
        return httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:
        raise RetrievalError("retrieval.failed", url, f"{url!r} is not a URL: {exc}") from exc


def _timeout(policy: RetrievalPolicy, deadline: float, clock: Callable[[], float]) -> httpx.Timeout:
    remaining = deadline - clock()
    if remaining <= 0:
        raise httpcore.TimeoutException("the fetch used its whole time budget")
    return httpx.Timeout(connect=min(policy.connect_timeout, remaining), read=remaining,
                         write=remaining, pool=remaining)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _AddressRefused(Exception):
    """The backend refused to connect to an address; mapped to retrieval.private-address."""


class _DeadlineStream(httpcore.NetworkStream):
    """A network stream whose every read and write gets at most the time left for the fetch."""

    def __init__(self, stream: httpcore.NetworkStream, deadline: float,
                 clock: Callable[[], float]) -> None:
        self._stream = stream
        self._deadline = deadline
        self._clock = clock

    def _within(self, timeout: float | None) -> float:
        remaining = self._deadline - self._clock()
        if remaining <= 0:
            raise httpcore.ReadTimeout("the fetch used its whole time budget")
        return remaining if timeout is None else min(timeout, remaining)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, self._within(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, self._within(timeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        secured = self._stream.start_tls(ssl_context, server_hostname, self._within(timeout))
        return _DeadlineStream(secured, self._deadline, self._clock)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


def _system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class _GuardedBackend(httpcore.NetworkBackend):
    """Resolves once, checks every address, and connects to the address it checked."""

    def __init__(self, policy: RetrievalPolicy, deadline: float,
                 clock: Callable[[], float]) -> None:
        self._policy = policy
        self._deadline = deadline
        self._clock = clock
        self._sockets = httpcore.SyncBackend()
        # Whether a connection went to a non-public address (only possible when allowed), so
        # that a cached copy is not served later under a policy that forbids it.
        self.reached_private = False

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = self._addresses(host, port, timeout)
        failure: Exception = httpcore.ConnectError(f"{host} has no address")
        for address in addresses:
            try:
                stream = self._sockets.connect_tcp(
                    address, port, timeout=self._within(timeout), local_address=local_address,
                    socket_options=socket_options)
            except httpcore.ConnectError as exc:
                failure = exc
                continue
            return _DeadlineStream(stream, self._deadline, self._clock)
        raise failure

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("retrieval never uses unix sockets")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def _within(self, timeout: float | None) -> float:
        remaining = self._deadline - self._clock()
        if remaining <= 0:
            raise httpcore.ConnectTimeout("the fetch used its whole time budget")
        return remaining if timeout is None else min(timeout, remaining)

    def _addresses(self, host: str, port: int, timeout: float | None) -> list[str]:
        try:
            ipaddress.ip_address(host)
            resolved: Sequence[str] = [host]
        except ValueError:
            resolved = self._resolve(host, port, self._within(timeout))
        addresses = [str(ipaddress.ip_address(a)) for a in resolved]
        private = [a for a in addresses if not is_public_address(a)]
        if private and not self._policy.allow_private_addresses:
            if resolved == [host]:
                raise _AddressRefused(f"the address {host} is not a public address")
            raise _AddressRefused(f"{host} resolves to {', '.join(private)}, which is not a public "
                                  "address")
        self.reached_private = self.reached_private or bool(private)
        return addresses

    def _resolve(self, host: str, port: int, timeout: float) -> Sequence[str]:
        # getaddrinfo cannot be given a timeout, so it runs in a worker thread that the
        # fetch stops waiting for; the thread ends when the resolver returns.
        resolver = self._policy.resolver or _system_resolver
        outcome: list[Sequence[str] | BaseException] = []

        def run() -> None:
            try:
                outcome.append(resolver(host, port))
            except Exception as exc:
                outcome.append(exc)

        worker = threading.Thread(target=run, name=f"resolve {host}", daemon=True)
        worker.start()
        worker.join(timeout)
        if not outcome:
            raise httpcore.ConnectTimeout(f"resolving {host} took longer than {timeout:.2f} s")
        result = outcome[0]
        if isinstance(result, BaseException):
            raise httpcore.ConnectError(f"resolving {host} failed: {_describe(result)}") from result
        return result


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


class _GuardedTransport(httpx.BaseTransport):
    """httpx over an httpcore pool whose every connection is opened by the guarded backend.

    Modelled on ``httpx.HTTPTransport``, which cannot be given a network backend. httpcore
    errors are not translated here: the retriever maps httpx and httpcore errors together.
    """

    def __init__(self, ssl_context: ssl.SSLContext, backend: httpcore.NetworkBackend) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context, http1=True, http2=False, retries=0, network_backend=backend)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)
        response = self._pool.handle_request(httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host,
                             port=request.url.port, target=request.url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        ))
        assert isinstance(response.stream, Iterable)
        return httpx.Response(status_code=response.status, headers=response.headers,
                              stream=_Body(response.stream), extensions=response.extensions)

    def close(self) -> None:
        self._pool.close()
