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
byte) gets no second one, so an interrupted reaudit is simply run again. A run stored under
``--opaque-ids`` is judged against declarations pseudonymized with the key it was stored with
(told by the key's fingerprint in its record), or refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple

import pyoxigraph as ox

from .. import data
from .._exceptions import ConfigurationError
from .audit import RunAudit, audit
from .declarations import Declarations
from .privacy import Disclosure
from .store import (
    VERDICTS,
    Basis,
    Pseudonymous,
    StoreError,
    TraceStore,
    instant_literal,
    key_fingerprint,
    opaque_declarations,
    record_run,
    run_from_record,
    term,
)

PREFIX = "trace_history_"
_PARAMETER = re.compile(r"^#param\s+([A-Za-z_][A-Za-z0-9_]*)\s*(.*)$", re.MULTILINE)


class QueryError(ConfigurationError):
    """A query that cannot be run as given: unknown, malformed, or missing a parameter
    (exit status 2)."""


class NamedQuery(NamedTuple):
    name: str
    summary: str
    parameters: dict[str, str]  # name -> what it is
    text: str


def parameters(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2).strip() for m in _PARAMETER.finditer(text)}


def named_queries() -> dict[str, NamedQuery]:
    """The shipped history queries, by name (``runs``, ``undeclared_uses``, ...)."""
    out = {}
    for stem in sorted(data.shipped("queries", ".rq")):
        if not stem.startswith(PREFIX):
            continue
        text = data.query(stem)
        comments = []
        for line in text.splitlines():
            if not line.startswith("#") or line.startswith("#param"):
                break
            comments.append(line.lstrip("# ").strip())
        summary = " ".join(comments).split(": ")[0].split(". ")[0]
        name = stem.removeprefix(PREFIX)
        out[name] = NamedQuery(name, summary, parameters(text), text)
    return out


def _value(value: Any) -> Any:
    """A result term as plain JSON: numbers and booleans as such, everything else its text."""
    if value is None:
        return None
    if isinstance(value, ox.Literal):
        datatype = value.datatype.value.rpartition("#")[2]
        if datatype in ("integer", "long", "int", "nonNegativeInteger"):
            return int(value.value)
        if datatype == "boolean":
            return value.value == "true"
        if datatype in ("double", "float"):
            return float(value.value)
        return value.value
    return value.value if hasattr(value, "value") else str(value)


class Answer(NamedTuple):
    variables: tuple[str, ...]
    rows: list[dict[str, Any]]


def ask(store: TraceStore, text: str, given: dict[str, str],
        required: dict[str, str] | None = None) -> Answer:
    """Run ``text`` on ``store`` with the parameters ``given``; every ``required`` one must be."""
    missing = sorted(set(required or {}) - set(given))
    if missing:
        raise QueryError("the query needs " + ", ".join(
            f"--param {name}=VALUE ({(required or {})[name]})" for name in missing))
    try:
        result = store.query(text, given)
    except SyntaxError as exc:
        raise QueryError(f"the query is not SPARQL: {str(exc).splitlines()[0]}") from None
    except (OSError, RuntimeError) as exc:  # evaluation errors, a parameter not selected
        raise QueryError(f"the query cannot be evaluated: {exc}") from None
    if isinstance(result, bool | ox.QueryBoolean):
        return Answer(("ask",), [{"ask": bool(result)}])
    if isinstance(result, ox.QuerySolutions):
        variables = tuple(v.value for v in result.variables)
        rows = [{name: _value(row[name]) for name in variables} for row in result]
        return Answer(variables, rows)
    names = ("subject", "predicate", "object")  # CONSTRUCT and DESCRIBE: triples
    return Answer(names, [dict(zip(names, (_value(t.subject), _value(t.predicate),
                                           _value(t.object)), strict=True)) for t in result])


# --- reaudit ------------------------------------------------------------------------------------


class Rejudged(NamedTuple):
    audit: RunAudit
    recorded: bool  # False: its current verdict was judged against these declarations
    disclose: Disclosure  # how its identities are shown


def stored(store: TraceStore, wanted: list[str] | None = None,
           key: bytes | None = None) -> list[tuple[str, Any, bool]]:
    """The stored runs (``wanted``: only the runs of these ids) as (record text, Run, opaque);
    every one is checked before any is judged again. A run stored under ``--opaque-ids``
    needs the key it was stored with."""
    missing = set(wanted or ())
    out = []
    recorded: set[str] = set()
    for graph, text in store.stored_runs():
        recorded.add(graph)
        try:
            record = json.loads(text)
            run = run_from_record(record["run"])
            mode: str = record["mode"]
            if not isinstance(mode, str):
                raise TypeError(mode)
        except (ValueError, KeyError, TypeError, AttributeError):
            raise StoreError(
                f"the record of run {graph.rpartition(':')[2]} in {store.path} is damaged (not "
                "a run record of this ioa-check): no run was judged again; feed its input "
                "again to rewrite it, or reaudit the others with --run") from None
        if wanted is not None and run.ident not in wanted:
            continue
        missing.discard(run.ident)
        opaque = mode.startswith("opaque:")
        if opaque:
            fingerprint = mode.removeprefix("opaque:").partition("+")[0]
            if key is None:
                raise StoreError(
                    f"run {run.ident} was stored with --opaque-ids: its record names agents "
                    "and calls by keyed references only; give the key it was stored with "
                    "(--opaque-key FILE or $IOA_CHECK_OPAQUE_KEY), so that the declarations "
                    "can be matched to them")
            if key_fingerprint(key) != fingerprint:
                raise StoreError(f"run {run.ident} was stored with --opaque-ids under another "
                                 "key than the one given")
        out.append((text, run, opaque))
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


def reaudit(store: TraceStore, grounds: Grounds, at: datetime | None,
            runs: list[str] | None = None, key: bytes | None = None) -> list[Rejudged]:
    """Every stored run (or those of ``runs``) judged against the declarations ``grounds``
    reads (worded through the disclosure it is given), the new verdicts appended, one
    transaction a run. A run stored under ``--opaque-ids`` is judged against the
    declarations with their names replaced by the references of ``key``, as it was loaded."""
    instant = instant_literal(at)
    plain: tuple[Declarations, Basis] | None = None
    keyed: tuple[Declarations, Basis] | None = None
    out = []
    for text, run, opaque in stored(store, runs, key):
        if opaque:
            assert key is not None
            if keyed is None:
                read, basis = grounds(Disclosure(key))
                keyed = (opaque_declarations(read, Disclosure(key)), basis)
            declarations, basis = keyed
            disclose: Disclosure = Pseudonymous()
        else:
            if plain is None:
                plain = grounds(Disclosure(None))
            declarations, basis = plain
            disclose = Disclosure(None)
        result = audit(run, declarations, disclose)
        written = record_run(store, result, declarations, disclose, basis, instant,
                             "reaudit", None, stored_record=text)
        out.append(Rejudged(result, bool(written), disclose))
    store.flush()
    return out
