"""The history of a trace store: named queries over its runs and verdicts, and reaudit.

The queries are files, ``ioa_semantic/data/queries/trace_history_<name>.rq``, each opening
with comments that say what it answers (the first line is its summary) and, as
``#param NAME description`` lines, the parameters it needs; a parameter is bound as a plain
literal (SPARQL substitution, so it joins like any other value). Results are rows of plain
JSON values.

Revalidation (draft section 5): when a manifest or a registration changes, the stored runs
are judged again against the new declarations from their stored records, without reading
their event files; each new verdict is appended beside the old ones, which stay. A run whose
current verdict was judged against exactly these declarations (the same files, byte for
byte) gets no second one, so an interrupted reaudit is simply run again. A run of a private
store is judged under the store's own key: the declarations' paths keyed, the references of
the agent names they publish turned back into the names (:func:`~.store.revealed`), so that
an agent declared since it was stored is matched. A run stored under ``--opaque-ids`` (a
store of version 1) is judged against declarations pseudonymized with the key it was stored
with (told by the key's fingerprint in its record), or refused.

A parameter declared ``#param NAME:run`` is a run id: on a private store the id given is
keyed with the store's key (a reference ``run-…`` is taken as it is), so that a user names
runs by the ids their traces have.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, NamedTuple

import pyoxigraph as ox

from .. import data
from .._exceptions import ConfigurationError
from .audit import RunAudit, audit
from .calls import Run
from .declarations import Declarations
from .privacy import Disclosure, Private
from .store import (
    VERDICTS,
    Basis,
    Pseudonymous,
    StoreError,
    TraceStore,
    instant_literal,
    key_fingerprint,
    opaque_declarations,
    published,
    record_digest,
    record_run,
    revealed,
    run_from_record,
    term,
)

PREFIX = "trace_history_"
# "#param NAME description", or "#param NAME:run description" for a run id.
_PARAMETER = re.compile(r"^#param\s+([A-Za-z_][A-Za-z0-9_]*)(?::([a-z]+))?\s*(.*)$",
                        re.MULTILINE)
KINDS = ("run",)
# "#time NAME...": the variables whose values are Unix seconds (as the traces write times),
# shown to people as ISO-8601 (``trace query --format table``).
_TIMES = re.compile(r"^#time((?:\s+[A-Za-z_][A-Za-z0-9_]*)+)\s*$", re.MULTILINE)
# A run's reference in a private store (Disclosure's "run-" and 20 hex digits).
_RUN_REFERENCE = re.compile(r"run-[0-9a-f]{20}")


class QueryError(ConfigurationError):
    """A query that cannot be run as given: unknown, malformed, or missing a parameter
    (exit status 2)."""


class NamedQuery(NamedTuple):
    name: str
    summary: str
    parameters: dict[str, str]  # name -> what it is
    text: str
    runs: frozenset[str]  # the parameters that are run ids
    times: frozenset[str] = frozenset()  # the variables that are Unix seconds


def times(text: str) -> frozenset[str]:
    """The variables ``text`` declares as Unix seconds (``#time NAME...``)."""
    return frozenset(name for match in _TIMES.finditer(text) for name in match.group(1).split())


def iso_instant(value: Any) -> str | None:
    """Unix seconds (decimal text, as the traces write them, or a number) as ISO-8601 in UTC,
    its fraction kept to the digits given; None when ``value`` is no such time."""
    from decimal import ROUND_FLOOR, Decimal, InvalidOperation

    if value is None or isinstance(value, bool):
        return None
    try:
        exact = Decimal(str(value))
    except InvalidOperation:
        return None
    if not exact.is_finite():
        return None
    seconds = int(exact.to_integral_value(rounding=ROUND_FLOOR))
    try:
        moment = datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    fraction = format(exact - seconds, "f").partition(".")[2].rstrip("0")
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


def parameters(text: str) -> dict[str, str]:
    return {m.group(1): m.group(3).strip() for m in _PARAMETER.finditer(text)}


def run_parameters(text: str) -> frozenset[str]:
    """The parameters ``text`` declares as run ids (``#param NAME:run``); another kind is a
    :class:`QueryError`."""
    out = set()
    for match in _PARAMETER.finditer(text):
        kind = match.group(2)
        if kind is not None and kind not in KINDS:
            raise QueryError(f"#param {match.group(1)}:{kind}: the kinds of a parameter are "
                             + ", ".join(KINDS))
        if kind == "run":
            out.add(match.group(1))
    return frozenset(out)


def stored_ids(store: TraceStore, given: dict[str, str], runs: frozenset[str]) -> dict[str, str]:
    """``given`` with each run id among ``runs`` as the store names it: keyed with a private
    store's key, unless it is a reference already."""
    ids = {name for name, value in given.items()
           if name in runs and not _RUN_REFERENCE.fullmatch(value)}
    if not store.private or not ids:
        return given
    keyed = Private(store.key())
    return {name: keyed.keyed("run", value) if name in ids else value
            for name, value in given.items()}


def _first_clause(text: str) -> str:
    """A comment's first clause: up to its first ": " or ". " outside parentheses."""
    depth = 0
    for at, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and char in ":." and text[at + 1:at + 2] in (" ", ""):
            return text[:at]
    return text


def named_queries() -> dict[str, NamedQuery]:
    """The shipped history queries, by name (``runs``, ``undeclared_uses``, ...)."""
    out = {}
    for stem in sorted(data.shipped("queries", ".rq")):
        if not stem.startswith(PREFIX):
            continue
        text = data.query(stem)
        comments = []
        for line in text.splitlines():
            if not line.startswith("#") or line.startswith(("#param", "#time")):
                break
            comments.append(line.lstrip("# ").strip())
        summary = _first_clause(" ".join(comments))
        name = stem.removeprefix(PREFIX)
        out[name] = NamedQuery(name, summary, parameters(text), text, run_parameters(text),
                               times(text))
    return out


def _value(value: Any) -> Any:
    """A result term as plain JSON: numbers and booleans as such, everything else its text
    (an ill-typed number, ``"abc"^^xsd:integer``, its lexical form)."""
    if value is None:
        return None
    if isinstance(value, ox.Literal):
        datatype = value.datatype.value.rpartition("#")[2]
        try:
            if datatype in ("integer", "long", "int", "nonNegativeInteger"):
                return int(value.value)
            if datatype in ("double", "float"):
                return float(value.value)
        except ValueError:
            return value.value
        if datatype == "boolean":
            return value.value == "true"
        return value.value
    return value.value if hasattr(value, "value") else str(value)


class Answer(NamedTuple):
    variables: tuple[str, ...]
    rows: list[dict[str, Any]]


# The bounds of a user's query (``--sparql``), the defaults of ``trace query --timeout`` and
# ``--max-rows``: a query of one's own can ask for a cross product of the whole store.
TIMEOUT = 30.0
MAX_ROWS = 100_000

_SERVICE = re.compile("service", re.IGNORECASE)
_NAME_CHARS = 200  # a longer word before "service" is not taken for a variable's name


def _checked(given: dict[str, str], required: dict[str, str] | None) -> None:
    missing = sorted(set(required or {}) - set(given))
    if missing:
        raise QueryError("the query needs " + ", ".join(
            f"--param {name}=VALUE ({(required or {})[name]})" for name in missing))
    for name in given:
        try:
            ox.Variable(name)
        except ValueError:
            raise QueryError(f"--param {name!r}: {name!r} is not a SPARQL variable name "
                             "(letters, digits and _)") from None


def refuse_service(text: str) -> None:
    """Refuse a query that can reach another endpoint (SPARQL ``SERVICE``), before it runs.

    Oxigraph follows ``SERVICE <IRI>`` to any host, and it offers neither a way to turn that
    off nor the query's algebra. So every occurrence of the word, in any case, that is not
    the tail of a variable's name (``?service``) is replaced by ``%25%25%25``, which is a
    syntax error wherever a keyword can stand (``%`` is code only inside a prefixed name's
    local part, which no keyword can begin) and harmless in a string, a comment or an IRI
    (``~``, for one, would not do: SPARQL 1.2 reifiers), and Oxigraph parses the result (an
    empty in-memory store, nothing read): if it still parses, each occurrence was text,
    never the keyword. The parser decides, not a lexer of
    ours, so no spelling can slip through (``1SERVICE``, a ``<`` that is an operator, not an
    IRI); a query whose strings mention the word parses as before."""
    spans = [m.span() for m in _SERVICE.finditer(text) if not _in_variable(text, m.start())]
    if not spans:
        return
    probe, at = [], 0
    for start, end in spans:
        probe.append(text[at:start] + "%25%25%25")
        at = end
    probe.append(text[at:])
    try:
        ox.Store().query("".join(probe))
    except SyntaxError:
        raise QueryError(
            "the query is refused: it names SERVICE (a request to another SPARQL endpoint), "
            "or it is not SPARQL; trace query reads the store only and makes no request",
        ) from None
    except (OSError, RuntimeError, ValueError):
        pass  # it parsed: evaluating it on the empty store is no concern of this check


def _in_variable(text: str, start: int) -> bool:
    """Whether the word at ``start`` continues a variable's name (``?service``, ``$my_service``);
    a variable's name is one token, so no keyword can begin inside it."""
    index = start
    while index > 0 and start - index < _NAME_CHARS and (
            text[index - 1].isalnum() or text[index - 1] in "_\u00b7"):
        index -= 1
    return index > 0 and start - index < _NAME_CHARS and text[index - 1] in "?$"


def ask(store: TraceStore, text: str, given: dict[str, str],
        required: dict[str, str] | None = None, max_rows: int | None = None,
        runs: frozenset[str] = frozenset()) -> Answer:
    """Run ``text`` on ``store`` with the parameters ``given``; every ``required`` one must be,
    and those named in ``runs`` are run ids (:func:`stored_ids`). More than ``max_rows`` rows
    is a :class:`QueryError`."""
    _checked(given, required)
    given = stored_ids(store, given, runs)
    try:
        result = store.query(text, given)
    except SyntaxError as exc:
        raise QueryError(f"the query is not SPARQL: {str(exc).splitlines()[0]}") from None
    except (OSError, RuntimeError, ValueError) as exc:  # evaluation errors, a parameter
        raise QueryError(f"the query cannot be evaluated: {exc}") from None  # not selected
    if isinstance(result, bool | ox.QueryBoolean):
        return Answer(("ask",), [{"ask": bool(result)}])
    if isinstance(result, ox.QuerySolutions):
        variables = tuple(v.value for v in result.variables)
    else:
        variables = ("subject", "predicate", "object")  # CONSTRUCT and DESCRIBE: triples
    rows: list[dict[str, Any]] = []
    try:  # the rows are evaluated as they are read: their errors come here
        for item in result:
            if max_rows is not None and len(rows) == max_rows:
                raise QueryError(f"the query has more than {max_rows} rows (--max-rows); "
                                 "nothing was printed")
            if isinstance(result, ox.QuerySolutions):
                rows.append({name: _value(item[name]) for name in variables})
            else:
                rows.append(dict(zip(variables, (_value(item.subject), _value(item.predicate),
                                                 _value(item.object)), strict=True)))
    except (OSError, RuntimeError, ValueError, SyntaxError) as exc:
        raise QueryError(f"the query cannot be evaluated: {exc}") from None
    return Answer(variables, rows)


def ask_bounded(path: str, text: str, given: dict[str, str],
                required: dict[str, str] | None = None, timeout: float = TIMEOUT,
                max_rows: int = MAX_ROWS, runs: frozenset[str] = frozenset(),
                key_file: str | None = None) -> Answer:
    """A user's query on the store at ``path``: refused if it names ``SERVICE``, else run in
    a child process that opens the store, so that a query still running after ``timeout``
    seconds is ended (SIGKILL: Oxigraph cannot interrupt a query in-process), and with it
    the store's lock; more than ``max_rows`` rows ends it too. Either is a
    :class:`QueryError` and nothing is printed."""
    import os
    import selectors
    import subprocess
    import sys
    import time

    _checked(given, required)
    refuse_service(text)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])])}
    request = json.dumps({"store": path, "text": text, "given": given, "max_rows": max_rows,
                          "runs": sorted(runs), "key_file": key_file})
    child = subprocess.Popen(
        [sys.executable, "-c", "from ioa_semantic.trace.history import _child; _child()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert child.stdin is not None and child.stdout is not None
    try:
        child.stdin.write(request.encode())
        child.stdin.close()
        deadline = time.monotonic() + timeout
        chunks = []
        with selectors.DefaultSelector() as selector:
            selector.register(child.stdout, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise QueryError(f"the query did not finish within {timeout:g} s "
                                     "(--timeout); it was stopped and nothing was printed")
                chunk = os.read(child.stdout.fileno(), 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        child.stdout.close()
    try:
        reply = json.loads(b"".join(chunks))
    except ValueError:
        raise QueryError(f"the query ended without an answer (its process exited with status "
                         f"{child.returncode})") from None
    if "error" in reply:
        if reply.get("kind") == "unavailable":
            from .store import StoreUnavailable

            raise StoreUnavailable(reply["error"])
        raise QueryError(reply["error"])
    return Answer(tuple(reply["variables"]), reply["rows"])


def _child() -> None:
    """The child process of :func:`ask_bounded`: a request on stdin, one JSON reply on
    stdout (the answer, or the error a usage error or an unavailable store is told by)."""
    import sys

    from .store import StoreUnavailable, open_store

    request = json.loads(sys.stdin.read())
    reply: dict[str, Any]
    try:
        answer = ask(open_store(request["store"], key_file=request.get("key_file")),
                     request["text"], request["given"], None,
                     request["max_rows"], frozenset(request["runs"]))
        reply = {"variables": answer.variables, "rows": answer.rows}
    except StoreUnavailable as exc:
        reply = {"error": str(exc), "kind": "unavailable"}
    except ConfigurationError as exc:
        reply = {"error": str(exc), "kind": "usage"}
    except Exception as exc:  # told to the parent: never a traceback
        reply = {"error": f"the query cannot be evaluated: {exc}", "kind": "usage"}
    sys.stdout.write(json.dumps(reply, ensure_ascii=False))
    sys.stdout.flush()


# --- reaudit ------------------------------------------------------------------------------------


class Rejudged(NamedTuple):
    audit: RunAudit
    recorded: bool  # False: its current verdict was judged against these declarations
    disclose: Disclosure  # how its identities are shown


class Stored(NamedTuple):
    """A stored run as a reaudit reads it."""

    record: str  # the record's text
    run: Run
    mode: str  # "plain", "opaque" (version 1, a key of the user's) or "private"


def _modes(store: TraceStore, graph: str, record: dict[str, Any], key: bytes | None) -> str:
    """How a stored record was disclosed, held to what the store and the key given say."""
    mode = record["mode"]
    if not isinstance(mode, str):
        raise TypeError(mode)
    name = graph.rpartition(":")[2]
    if mode.startswith("private:"):
        if mode != store.mode:
            raise StoreError(f"the record of run {name} in {store.path} was stored under another "
                             "key than the store's: no run was judged again")
        return "private"
    if store.private:
        raise StoreError(f"the record of run {name} in {store.path} is not a private one, in a "
                         "private store: no run was judged again")
    if not mode.startswith("opaque:"):
        return "plain"
    fingerprint = mode.removeprefix("opaque:").partition("+")[0]
    if key is None:
        raise StoreError(
            f"run {name} was stored with --opaque-ids: its record names agents and calls by "
            "keyed references only; give the key it was stored with (--opaque-key FILE or "
            "$IOA_CHECK_OPAQUE_KEY), so that the declarations can be matched to them")
    if key_fingerprint(key) != fingerprint:
        raise StoreError(f"run {name} was stored with --opaque-ids under another key than the "
                         "one given")
    return "opaque"


def stored(store: TraceStore, wanted: list[str] | None = None,
           key: bytes | None = None) -> list[Stored]:
    """The stored runs (``wanted``: only the runs of these ids, or, in a private store,
    their references); every one is checked before any is judged again. A run stored under
    ``--opaque-ids`` needs the key it was stored with; a private store's runs, the store's."""
    names = {value: value for value in wanted or ()}
    if wanted and store.private:
        keyed = Private(store.key())
        names.update({keyed.keyed("run", value): value for value in wanted
                      if not _RUN_REFERENCE.fullmatch(value)})
    missing = set(wanted or ())
    out = []
    recorded: set[str] = set()
    for graph, text in store.stored_runs():
        recorded.add(graph)
        try:
            record = json.loads(text)
            run = run_from_record(record["run"])
            mode = _modes(store, graph, record, key)
        except (ValueError, KeyError, TypeError, AttributeError):
            raise StoreError(
                f"the record of run {graph.rpartition(':')[2]} in {store.path} is damaged (not "
                "a run record of this ioa-check): no run was judged again; feed its input "
                "again to rewrite it, or reaudit the others with --run") from None
        if store.record_digests(graph) != [record_digest(record)]:
            # Changed since it was written (a call taken out of it, say): judged, it would
            # rewrite the run's graph and digest and erase from the history what it changed.
            raise StoreError(
                f"the record of run {graph.rpartition(':')[2]} in {store.path} does not match "
                "the digest stored with it (it was changed after it was written): the store "
                "is damaged; no run was judged again and nothing was written")
        if wanted is not None and run.ident not in names:
            continue
        missing.discard(names.get(run.ident, run.ident))
        out.append(Stored(text, run, mode))
    if missing:
        raise StoreError(f"{store.path} holds no run {', '.join(sorted(missing))}")
    if wanted is None:
        judged = {q.object.value for q in store.store.quads_for_pattern(
            None, term("auditedRun"), None, ox.NamedNode(VERDICTS))
            if isinstance(q.object, ox.NamedNode)}
        lost = sorted(judged - recorded)
        if lost:
            # A run with verdicts but no record cannot be judged again; left out silently,
            # its old verdict would pass for a judgment against these declarations.
            raise StoreError(
                f"{store.path} holds verdicts of run{'s' if len(lost) > 1 else ''} "
                f"{', '.join(g.rpartition(':')[2] for g in lost)} but no record of "
                f"{'them' if len(lost) > 1 else 'it'}: no run was judged again; feed "
                "its input again, or reaudit the others with --run")
    return out


Grounds = Callable[[Disclosure], tuple[Declarations, Basis]]


class _Judging:
    """The declarations of a reaudit, read once for each way runs were stored."""

    def __init__(self, store: TraceStore, grounds: Grounds, key: bytes | None) -> None:
        self.store = store
        self.grounds = grounds
        self.key = key
        self._plain: tuple[Declarations, Basis] | None = None
        self._opaque: tuple[Declarations, Basis] | None = None
        self._private: tuple[Declarations, Basis, Private] | None = None

    def plain(self) -> tuple[Declarations, Basis]:
        if self._plain is None:
            self._plain = self.grounds(Disclosure(None))
        return self._plain

    def opaque(self) -> tuple[Declarations, Basis]:
        if self._opaque is None:
            assert self.key is not None
            read, basis = self.grounds(Disclosure(self.key))
            self._opaque = (opaque_declarations(read, Disclosure(self.key)), basis)
        return self._opaque

    def private(self) -> tuple[Declarations, Basis, Private]:
        """Under the store's key, the names the declarations publish readable: the plain
        reading tells which those are."""
        if self._private is None:
            agents, systems = published(self.plain()[0])
            keyed = Private(self.store.key(), agents, systems)
            read, basis = self.grounds(keyed)
            self._private = (opaque_declarations(read, keyed), basis, keyed)
        return self._private


def reaudit(store: TraceStore, grounds: Grounds, at: datetime | None,
            runs: list[str] | None = None, key: bytes | None = None) -> list[Rejudged]:
    """Every stored run (or those of ``runs``) judged against the declarations ``grounds``
    reads (worded through the disclosure it is given), the new verdicts appended, one
    transaction a run. A run of a private store is judged under the store's key
    (:meth:`_Judging.private`); one stored under ``--opaque-ids`` against the declarations
    with their names replaced by the references of ``key``, as it was loaded."""
    instant = instant_literal(at)
    reading = _Judging(store, grounds, key)
    out = []
    for text, run, mode in stored(store, runs, key):
        disclose: Disclosure
        if mode == "private":
            declarations, basis, keyed = reading.private()
            run = revealed(run, keyed)
            disclose = Pseudonymous()
        elif mode == "opaque":
            declarations, basis = reading.opaque()
            disclose = Pseudonymous()
        else:
            declarations, basis = reading.plain()
            disclose = Disclosure(None)
        result = audit(run, declarations, disclose)
        written = record_run(store, result, declarations, disclose, basis, instant,
                             "reaudit", None, mode, stored_record=text)
        out.append(Rejudged(result, bool(written), disclose))
    store.flush()
    return out
