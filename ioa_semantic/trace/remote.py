"""The trace store on a SPARQL 1.1 server that many feeders share (``--store URL``).

The embedded store (:class:`~.store.TraceStore`) is one folder, one writer at a time. A
remote store keeps the very same graphs (runs, records, verdicts, checkpoints, the store's
version and mode) on a server reached through the SPARQL 1.1 Protocol: queries are POSTed to
``URL/query`` and updates to ``URL/update`` (the layout of the Oxigraph server and of Apache
Jena Fuseki's datasets). Every term is written through pyoxigraph's own serialisation
(``str(term)``, N-Triples form), never by pasting user data into SPARQL.

**One update request is one transaction**, and that is all a SPARQL server promises: the
Oxigraph server gives an update "repeatable read" isolation, a snapshot and no conflict
detection, so two updates that each read the greatest verdict number and add one both write
the same number (tests/test_trace_store_remote.py shows it). So:

* a batch and its checkpoint, and a run's graph, record and verdict, are each one update
  request (atomic): a feeder cut off between two leaves nothing half written;
* the reads and the write that record one run are made under a **turn** (:class:`Turn`), a
  lease in the graph ``urn:ioa-trace:lock`` taken by *claim and read back*: a feeder claims
  the next turn number with an update, then reads the claims of that number; it holds the
  turn only if its claim is the only one. Whoever commits second sees the first's claim, so
  two can never both hold one turn (both may lose, and both try again). A turn left by a
  feeder that died is free again after :data:`LEASE` seconds of the server's clock
  (``NOW()``); every write under a turn is fenced (it applies only while no later turn was
  claimed), and a turn that was overtaken is a :class:`~.store.StoreUnavailable` at its end:
  a rerun records what it could not, once.

Bad answers are bounded: every request has a timeout, every answer a size cap
(:data:`MAX_ANSWER_BYTES`), and every foreign error (httpx's, a status other than 2xx, an
answer that is not SPARQL results) is mapped here, at one boundary, to
:class:`~.store.StoreUnavailable` (exit status 74) with a reason that names the server by its
URL without any user name or password.
"""

from __future__ import annotations

import os
import random
import secrets
import time
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pyoxigraph as ox

from .graph import IOAT
from .privacy import IRI_BASE
from .store_errors import QueryRefused, StoreError, StoreUnavailable

LOCK_GRAPH = f"{IRI_BASE}lock"
# How long a turn is held at most: a feeder that died holding one delays the others so long.
LEASE = 60
# A test hook: the lease in seconds, so that a test of a feeder killed holding its turn does
# not wait a minute for the rerun.
LEASE_ENV = "IOA_CHECK_TEST_TURN_LEASE"
# How long a feeder waits for a turn before it gives up (another feeder holds turns that long).
TURN_WAIT = 300.0
# Per request: to connect, and to get each part of the answer.
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 120.0
# Per request, the whole answer: httpx's read timeout bounds each read, not their sum, so a
# server that sends a byte now and then would otherwise be waited for without end.
ANSWER_TIMEOUT = 600.0
# The largest answer read from a server (a hostile one could send for ever).
MAX_ANSWER_BYTES = 256 << 20
_RESULTS = "application/sparql-results+json"
_RESULTS_XML = "application/sparql-results+xml"
_TRIPLES = "application/n-triples"
_XSD = "http://www.w3.org/2001/XMLSchema#"


def shown(url: str) -> str:
    """The server as a message names it: scheme, host, port and path, no credentials, no
    query string."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


class SparqlServer:
    """A SPARQL 1.1 Protocol client with the part of :class:`pyoxigraph.Store`'s interface the
    trace store uses (``quads_for_pattern``, ``extend``, ``update``, ``query``, ``flush``)."""

    def __init__(self, url: str, max_bytes: int = MAX_ANSWER_BYTES,
                 read_timeout: float = READ_TIMEOUT,
                 answer_timeout: float = ANSWER_TIMEOUT) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise StoreError(f"--store {shown(url)} is not an http:// or https:// URL")
        if parts.query or parts.fragment:
            raise StoreError(f"--store {shown(url)}: the URL of a SPARQL server's dataset has "
                             "no query string or fragment (its endpoints are URL/query and "
                             "URL/update)")
        self.url = url.rstrip("/")
        self.name = shown(url)
        self.max_bytes = max_bytes
        self.answer_timeout = answer_timeout
        import httpx  # here: the embedded store, the default, never needs it

        # Credentials in the URL go as HTTP basic authentication (httpx takes them from it);
        # no proxy or netrc from the environment: the store is the URL given, nothing else.
        self._client = httpx.Client(
            timeout=httpx.Timeout(read_timeout, connect=CONNECT_TIMEOUT),
            follow_redirects=False, trust_env=False)

    def close(self) -> None:
        self._client.close()

    def _post(self, endpoint: str, body: str, kind: str, accept: str) -> tuple[str, bytes]:
        """POST ``body`` to ``URL/endpoint``: the answer's media type and bytes. The one
        place where the server's and httpx's errors become :class:`StoreUnavailable`."""
        import httpx

        deadline = time.monotonic() + self.answer_timeout
        try:
            with self._client.stream(
                    "POST", f"{self.url}/{endpoint}", content=body.encode("utf-8"),
                    headers={"content-type": kind, "accept": accept}) as answer:
                chunks, size = [], 0
                for chunk in answer.iter_bytes():
                    if time.monotonic() > deadline:
                        raise StoreUnavailable(
                            f"the trace store {self.name} did not finish its answer within "
                            f"{self.answer_timeout:g} s; nothing more was read")
                    size += len(chunk)
                    if size > self.max_bytes:
                        raise StoreUnavailable(
                            f"the trace store {self.name} answered more than "
                            f"{self.max_bytes} bytes to one request; nothing more was read")
                    chunks.append(chunk)
                data = b"".join(chunks)
                status = answer.status_code
                media = answer.headers.get("content-type", "").split(";")[0].strip().lower()
        except httpx.HTTPError as exc:
            raise StoreUnavailable(
                f"the trace store {self.name} cannot be reached ({type(exc).__name__}): "
                "nothing more was written; run again when the server is back") from None
        if status == 400 and endpoint == "query":
            # The query is not SPARQL, or not the server's: the user's error when the query
            # is the user's (RemoteTraceStore.query says so), else the store's.
            raise QueryRefused(f"the trace store {self.name} refused a query (HTTP status "
                               f"400): {_said(data)}")
        if not 200 <= status < 300:
            raise StoreUnavailable(
                f"the trace store {self.name} refused a request to /{endpoint} with HTTP "
                f"status {status}: {_said(data)}")
        return media, data

    def update(self, text: str) -> None:
        self._post("update", text, "application/sparql-update", "*/*")

    def query(self, text: str, substitutions: dict[Any, Any] | None = None) -> Any:
        """``text``'s answer as pyoxigraph gives it (solutions, a boolean, or triples).
        Substitutions are bound by a ``VALUES`` block after the query: the parameters of the
        shipped queries are read in their outer group, where that is the same binding."""
        if substitutions:
            names = list(substitutions)
            text += "\nVALUES (" + " ".join(str(n) for n in names) + ") { (" + " ".join(
                str(substitutions[n]) for n in names) + ") }"
        media, data = self._post("query", text, "application/sparql-query",
                                 f"{_RESULTS}, {_TRIPLES};q=0.9")
        try:
            if media == _TRIPLES:
                return iter([q.triple for q in ox.parse(data, format=ox.RdfFormat.N_TRIPLES)])
            results = (ox.QueryResultsFormat.XML if media == _RESULTS_XML
                       else ox.QueryResultsFormat.JSON)  # XML: a server that ignores Accept
            return ox.parse_query_results(data, format=results)
        except (SyntaxError, ValueError) as exc:
            raise StoreUnavailable(f"the trace store {self.name} answered what is not SPARQL "
                                   f"results ({media or 'no media type'}): {exc}") from None

    def select(self, text: str) -> list[dict[str, Any]]:
        """A SELECT query's rows, each a dict of its bound variables' terms."""
        result = self.query(text)
        if not isinstance(result, ox.QuerySolutions):
            raise StoreUnavailable(f"the trace store {self.name} answered a SELECT query with "
                                   "no solutions")
        names = [v.value for v in result.variables]
        try:
            return [{n: row[n] for n in names if row[n] is not None} for row in result]
        except (SyntaxError, ValueError) as exc:
            raise StoreUnavailable(f"the trace store {self.name} answered what is not SPARQL "
                                   f"results: {exc}") from None

    def quads_for_pattern(self, subject: Any, predicate: Any, object: Any,
                          graph_name: Any = None) -> Iterator[ox.Quad]:
        """The quads of the named graphs matching the pattern (None matches any term)."""
        given = {"s": subject, "p": predicate, "o": object, "g": graph_name}
        slots = {k: (str(v) if v is not None else f"?{k}") for k, v in given.items()}
        free = [k for k, v in given.items() if v is None]
        text = (f"SELECT {' '.join('?' + k for k in free) or '*'} WHERE {{ GRAPH {slots['g']} "
                f"{{ {slots['s']} {slots['p']} {slots['o']} }} }}")
        if not free:
            text = f"ASK {{ GRAPH {slots['g']} {{ {slots['s']} {slots['p']} {slots['o']} }} }}"
            if bool(self.query(text)):
                yield ox.Quad(subject, predicate, object, graph_name)
            return
        for row in self.select(text):
            terms = {**given, **row}
            yield ox.Quad(terms["s"], terms["p"], terms["o"], terms["g"])

    def extend(self, quads: Iterable[ox.Quad]) -> None:
        self.update(f"INSERT DATA {{ {data_block(quads)} }}")

    def flush(self) -> None:
        """Each update is durable when the server answers it."""

    def empty(self) -> bool:
        return not bool(self.query("ASK { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }"))


def _said(data: bytes) -> str:
    """The first line of what a server said, short and printable (it may be hostile)."""
    text = data[:200].decode("utf-8", "replace").strip().splitlines()
    line = text[0] if text else "(no message)"
    return "".join(c if c.isprintable() else "?" for c in line)


def data_block(quads: Iterable[ox.Quad]) -> str:
    """``quads`` as the body of ``INSERT DATA`` or an ``INSERT`` template: one ``GRAPH``
    block a graph, every term in pyoxigraph's N-Triples form."""
    by_graph: dict[str, list[str]] = {}
    for quad in quads:
        name = quad.graph_name
        if not isinstance(name, ox.NamedNode):
            raise ValueError("a trace store writes named graphs only")
        by_graph.setdefault(str(name), []).append(
            f"{ox.Triple(quad.subject, quad.predicate, quad.object)} .")
    return " ".join(f"GRAPH {name} {{ {' '.join(triples)} }}"
                    for name, triples in by_graph.items())


def _integer(value: int) -> str:
    return str(ox.Literal(str(value), datatype=ox.NamedNode(_XSD + "integer")))


class Turn:
    """A feeder's turn to write (see the module's docstring): claimed and read back, held
    while one run is recorded, then given back."""

    def __init__(self, server: SparqlServer) -> None:
        self.server = server
        self.token = secrets.token_hex(16)
        self.number: int | None = None
        self._graph = f"<{LOCK_GRAPH}>"
        hook = os.environ.get(LEASE_ENV, "")
        self.lease = int(hook) if hook.isdigit() else LEASE

    def _turn(self, number: int) -> str:
        return f"<{LOCK_GRAPH}:turn:{number}>"

    def _claim_node(self, number: int, token: str) -> str:
        return f"<{LOCK_GRAPH}:turn:{number}:claim:{token}>"

    def take(self) -> None:
        deadline = time.monotonic() + TURN_WAIT
        while True:
            last = self._last()
            if last is None or self._free(last):
                number = (last or 0) + 1
                if self._claim(number):
                    self.number = number
                    return
            if time.monotonic() > deadline:
                raise StoreUnavailable(
                    f"the trace store {self.server.name} gave no turn to write within "
                    f"{TURN_WAIT:g} s (other feeders hold it); nothing more was written")
            time.sleep(random.uniform(0.01, 0.1))

    def _last(self) -> int | None:
        rows = self.server.select(
            f"PREFIX ioat: <{IOAT}> SELECT (MAX(?n) AS ?last) WHERE {{ GRAPH "
            f"{self._graph} {{ ?t ioat:turn ?n }} }}")
        value = rows[0].get("last") if rows else None
        if value is None:
            return None
        if not isinstance(value, ox.Literal) or not value.value.isdigit():
            # Written by someone else than a feeder: no turn can be numbered after it.
            raise StoreUnavailable(
                f"the trace store {self.server.name} holds a turn number that is not one "
                f"({str(value)[:80]}) in the graph <{LOCK_GRAPH}>: it is damaged; remove "
                "that graph when no feeder runs")
        return int(value.value)

    def _free(self, number: int) -> bool:
        """Whether no claim of turn ``number`` is live (given back, or older than the lease)."""
        return not bool(self.server.query(
            f"PREFIX ioat: <{IOAT}> PREFIX xsd: <{_XSD}> ASK {{ GRAPH {self._graph} "
            f"{{ {self._turn(number)} ioat:claim ?c . ?c ioat:claimedAt ?at . "
            "FILTER NOT EXISTS { ?c ioat:done ?d } "
            f"FILTER(?at > NOW() - \"PT{self.lease}S\"^^xsd:dayTimeDuration) }} }}"))

    def _claim(self, number: int) -> bool:
        """Claim turn ``number`` and read its claims back: held only if this is the only one."""
        node = self._claim_node(number, self.token)
        self.server.update(
            f"PREFIX ioat: <{IOAT}> INSERT {{ GRAPH {self._graph} {{ "
            f"{self._turn(number)} ioat:turn {_integer(number)} ; ioat:claim {node} . "
            f"{node} ioat:token {ox.Literal(self.token)} ; ioat:claimedAt ?now }} }} "
            "WHERE { BIND(NOW() AS ?now) }")
        rows = self.server.select(
            f"PREFIX ioat: <{IOAT}> SELECT ?token WHERE {{ GRAPH {self._graph} {{ "
            f"{self._turn(number)} ioat:claim ?c . ?c ioat:token ?token }} }}")
        if [r["token"].value for r in rows if "token" in r] == [self.token] and not bool(
                self.server.query(self._later(number))):
            # The only claim, and of the greatest turn: a feeder that read the greatest
            # number long ago claims a turn others passed (and forgot, see give_back), whose
            # writes the fence would drop.
            return True
        self._done(number)  # lost (or both lost): the claim is given back at once
        return False

    def _forget(self, number: int) -> None:
        """Remove the turns before ``number`` and their claims: only the greatest turn
        number counts (to number the next, and to fence), and a lock graph that kept every
        turn would make each :meth:`take` read more as the store grows."""
        self.server.update(
            f"PREFIX ioat: <{IOAT}> DELETE {{ GRAPH {self._graph} {{ ?s ?p ?o }} }} WHERE {{ "
            f"GRAPH {self._graph} {{ ?s ?p ?o "
            f"FILTER NOT EXISTS {{ ?s ioat:turn ?m FILTER(?m >= {number}) }} "
            f"FILTER NOT EXISTS {{ ?t ioat:claim ?s ; ioat:turn ?k FILTER(?k >= {number}) }} "
            "} }")

    def _done(self, number: int) -> None:
        self.server.update(
            f"PREFIX ioat: <{IOAT}> INSERT DATA {{ GRAPH {self._graph} {{ "
            f"{self._claim_node(number, self.token)} ioat:done true }} }}")

    def _later(self, number: int) -> str:
        return (f"ASK {{ GRAPH {self._graph} {{ ?later <{IOAT + 'turn'}> ?n "
                f"FILTER(?n > {number}) }} }}")

    def fence(self) -> str:
        """The WHERE of a write under this turn: it applies only while no later turn was
        claimed (a turn held past its lease and taken over writes nothing more)."""
        assert self.number is not None
        return (f"FILTER NOT EXISTS {{ GRAPH {self._graph} {{ ?later <{IOAT + 'turn'}> "
                f"?n FILTER(?n > {self.number}) }} }}")

    def give_back(self) -> None:
        """End the turn: an error if it was overtaken (some fenced writes may not apply)."""
        assert self.number is not None
        number, self.number = self.number, None
        overtaken = bool(self.server.query(self._later(number)))
        self._done(number)
        self._forget(number)
        if overtaken:
            raise StoreUnavailable(
                f"the trace store {self.server.name}: this feeder held its turn to write for "
                f"more than {self.lease} s and another took it over; what it wrote since may be "
                "missing: run again to record it (nothing is recorded twice)")
