"""Task parameters as a profile declares them: name, term, datatype, unit and comparison.

Draft 6.4: "Parameter values MUST use the types, units, and comparison rules defined by the
applicable profile"; 7.2: an artifact defines "any parameter, input/output, unit, or domain
conditions needed for its use"; S3: a required domain or unit constraint that conflicts is
incompatible, "no implicit conversion". A profile declares each task parameter it speaks of
(``iop:taskParameter``, docs/parameters.md): the name a condition, a ``--param`` and a remedy
use; the property (``iop:term``) by which an envelope's ``profileContext`` and a capability
registration carry it; its datatype; optionally its unit (an IRI, from QUDT or UCUM); and how
a stated bound compares with the task's value. This module is the one place values are read
and compared by those declarations. The five parameters of the contract's table are built-in
declarations of the same kind (:data:`BUILT_IN`), which a profile may restate exactly.

A value is read from its lexical form by the declared datatype (``10000`` is more than
``5000`` as an integer, never as a string) and compared by the declared comparison; a value
stated in another unit than the declaration's is never converted: :func:`unit_problem` says
why it conflicts.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import re
from functools import lru_cache
from typing import Any, NamedTuple

from .._instants import instant
from .._iri import is_absolute_iri
from .._vocab import IOA, IOP
from ..pipeline.intake import number_text

XSD = "http://www.w3.org/2001/XMLSchema#"
# QUDT's quantity values: a value with its unit, as a sender writes one (docs/parameters.md).
QUDT = "http://qudt.org/schema/qudt/"
QUDT_NUMERIC_VALUE = QUDT + "numericValue"
QUDT_UNIT = QUDT + "unit"

# The datatypes a parameter may be declared with: the IRI a profile names, and the kind.
DATATYPES = {
    XSD + "integer": "integer",
    XSD + "decimal": "decimal",
    XSD + "dateTime": "dateTime",
    XSD + "string": "string",
    XSD + "anyURI": "iri",
    XSD + "language": "language",
    IOP + "MediaType": "mediaType",
}
_IRI_OF = {kind: iri for iri, kind in DATATYPES.items()}
_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDF_LANG_STRING = _RDF + "langString"
# The comparisons: how the task's value V stands to a stated bound B.
COMPARISONS = {
    IOP + "equal": "equal",  # V equals B (several stated values: any of them)
    IOP + "atMost": "atMost",  # V <= B
    IOP + "atLeast": "atLeast",  # V >= B
    IOP + "oneOf": "oneOf",  # V equals one of the stated values (a set)
}
ORDERED = frozenset({"integer", "decimal", "dateTime"})

# The lexical forms of the datatypes, compiled by re when a value of one is first read (its
# cache keeps them), not with the module: a check whose profile and envelope state no
# value of a datatype pays nothing for its pattern (the media type's alone is a quarter ms).
_INTEGER = r"[+-]?[0-9]+"
_DECIMAL = r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)"
# xsd:dateTime with its time zone: an offset of at most 14 hours (XML Schema 1.1, 3.3.7).
_DATE_TIME = (
    r"-?[0-9]{4,}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"(Z|[+-](?:(?:0[0-9]|1[0-3]):[0-5][0-9]|14:00))")
_LANGUAGE = r"[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*"
_TOKEN = r"[A-Za-z0-9!#$&^_.+-]"
_MEDIA_TYPE = (
    rf"[A-Za-z0-9]{_TOKEN}{{0,126}}/[A-Za-z0-9]{_TOKEN}{{0,126}}"
    rf"( *; *{_TOKEN}+=({_TOKEN}+|\"[^\"]*\"))*")
# Numbers past these lengths are no parameter a task means (and Decimal's work grows with them).
_MAX_DIGITS = 64


class Parameter(NamedTuple):
    """One declared task parameter."""

    name: str
    datatype: str  # a kind of DATATYPES: integer, decimal, dateTime, string, iri, language, mediaType
    comparison: str = "equal"  # a kind of COMPARISONS
    term: str | None = None  # the property that carries it in profileContext and registrations
    unit: str | None = None  # the unit every value of it is in (an IRI), if it has one

    @property
    def ordered(self) -> bool:
        return self.datatype in ORDERED


# The contract's table, as declarations (contract rule 10, "Task parameters").
BUILT_IN = {p.name: p for p in (
    Parameter("sourceLang", "language", term=IOA + "sourceLang"),
    Parameter("targetLang", "language", term=IOA + "targetLang"),
    Parameter("domain", "iri", term=IOA + "domain"),
    Parameter("inputMediaType", "mediaType", term=IOA + "inputs"),
    Parameter("outputMediaType", "mediaType", term=IOA + "outputs"),
)}


class Value(NamedTuple):
    """A parameter's value as stated: its lexical form and the unit stated with it (None:
    none stated, so the declaration's)."""

    lexical: str
    unit: str | None = None
    # The datatype a typed literal states (its @type), rdf:langString for a literal with a
    # language; None for a plain JSON value, an IRI or a quantity value.
    datatype: str | None = None


def key(parameter: Parameter, lexical: str) -> Any:
    """The value of ``lexical`` under the parameter's datatype, as compared; ValueError (its
    message a sentence for people) when it is not a lexical form of that datatype."""
    if len(lexical) > _MEMO_LENGTH:
        # Remembered only when short: the memo outlives every check, and a sender chooses
        # how long a string, IRI or language value is.
        return _key.__wrapped__(parameter.datatype, lexical)
    return _key(parameter.datatype, lexical)


_MEMO_LENGTH = 128


@lru_cache(maxsize=4096)
def _key(datatype: str, lexical: str) -> Any:  # noqa: C901 (one branch a datatype)
    if datatype == "string":
        return lexical
    if datatype in ("integer", "decimal") and len(lexical) > _MAX_DIGITS:
        # A number, perhaps, but longer than any a task means: said as such, not as "not a
        # number", so that the sender knows what to correct.
        raise ValueError(f"{lexical[:_MAX_DIGITS]!r}... is not read: it has more than "
                         f"{_MAX_DIGITS} characters, more than a number here may have")
    if datatype == "integer":
        if not re.fullmatch(_INTEGER, lexical):
            raise ValueError(f"{lexical!r} is not an integer")
        return int(lexical)
    if datatype == "decimal":
        if not re.fullmatch(_DECIMAL, lexical):
            raise ValueError(f"{lexical!r} is not a decimal number")
        from decimal import Decimal, InvalidOperation  # only for a decimal value

        try:
            return Decimal(lexical)
        except InvalidOperation:
            raise ValueError(f"{lexical!r} is not a decimal number") from None
    if datatype == "dateTime":
        if not re.fullmatch(_DATE_TIME, lexical):
            raise ValueError(f"{lexical!r} is not a date-time with a UTC offset")
        # Every fraction digit counts: a value a tenth of a microsecond past a bound is past
        # it (compared by the datatype, rule 10).
        return instant(lexical)
    if datatype == "iri":
        if not is_absolute_iri(lexical):
            raise ValueError(f"{lexical!r} is not an absolute IRI")
        return lexical
    if datatype == "language":
        # Language tags compare case-insensitively and exactly: no fallback from en-GB to en.
        if not re.fullmatch(_LANGUAGE, lexical):
            raise ValueError(f"{lexical!r} is not a language tag")
        return lexical.lower()
    if datatype == "mediaType":
        # Type and subtype compare case-insensitively; parameters exactly.
        if not re.fullmatch(_MEDIA_TYPE, lexical):
            raise ValueError(f"{lexical!r} is not a media type (type/subtype)")
        head, *params = lexical.split(";")
        return head.strip().lower(), tuple(p.strip() for p in params)
    raise ValueError(f"no datatype {datatype!r}")


def holds(parameter: Parameter, value: str, bound: str) -> bool:
    """Whether the task's ``value`` satisfies the parameter's comparison with a stated
    ``bound`` (both lexical forms in the declaration's unit); ValueError when either is not
    a lexical form of the datatype."""
    task, stated = key(parameter, value), key(parameter, bound)
    if parameter.comparison == "atMost":
        return bool(task <= stated)
    if parameter.comparison == "atLeast":
        return bool(task >= stated)
    return bool(task == stated)


def holds_any(parameter: Parameter, value: str, bounds: "tuple[str, ...] | list[str]") -> bool:
    """Whether ``value`` satisfies the comparison with one of the stated ``bounds`` (several
    stated values are alternatives: a provider accepting text/plain or text/html)."""
    return any(holds(parameter, value, bound) for bound in bounds)


def datatype_problem(parameter: Parameter, value: Value) -> str | None:
    """Why a typed literal's datatype is not the declaration's, or None (6.4: values use the
    profile's types; a literal typed otherwise is not read as if it were untyped). An
    integer is a decimal (XML Schema derives one from the other)."""
    if value.datatype is None:
        return None
    declared = _IRI_OF[parameter.datatype]
    if value.datatype == declared or (
            parameter.datatype == "decimal" and value.datatype == XSD + "integer"):
        return None
    return f"it is typed {value.datatype}, but {parameter.name} is {declared}"


def unit_problem(parameter: Parameter, stated: str | None) -> str | None:
    """Why a value stated in unit ``stated`` (None: no unit stated) conflicts with the
    declaration (S3: never converted), or None. A value without a unit is in the
    declaration's unit."""
    if stated is None or stated == parameter.unit:
        return None
    if parameter.unit is None:
        return f"it states the unit {stated}, but {parameter.name} has no unit"
    return (f"it is stated in {stated}, but {parameter.name} is in {parameter.unit}; no "
            "conversion is made")


def same_value(parameter: Parameter, a: str, b: str) -> bool:
    """Whether two lexical forms are the same value of the parameter (False when either is
    not a lexical form of its datatype)."""
    try:
        return bool(key(parameter, a) == key(parameter, b))
    except ValueError:
        return False


def describe(parameter: Parameter) -> str:
    """The declaration in words, for messages and remedies."""
    unit = f" in {parameter.unit}" if parameter.unit else ""
    return f"{parameter.name} ({parameter.datatype}{unit}, compared {parameter.comparison})"


def value_of(item: Any) -> Value | None:
    """A value of an expanded JSON-LD node's property as a :class:`Value`: a literal's
    lexical form, an IRI, or a QUDT quantity value (``qudt:numericValue`` with one
    ``qudt:unit``); None for anything else."""
    if not isinstance(item, dict):
        return None
    if "@value" in item:
        raw = item["@value"]
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            return None
        stated = item.get("@type")
        if "@language" in item:
            return Value(_lexical(raw), datatype=RDF_LANG_STRING)
        if isinstance(stated, str) and not stated.startswith((XSD, _RDF)):
            # A datatype outside XML Schema names the value's unit, as UCUM and CDT
            # literals do ("2"^^unit:MegaBYTE): held to the declaration's unit, never dropped.
            return Value(_lexical(raw), unit=stated)
        return Value(_lexical(raw), datatype=stated if isinstance(stated, str) else None)
    if set(item) == {"@id"}:
        return Value(str(item["@id"]))
    numbers = item.get(QUDT_NUMERIC_VALUE)
    units = item.get(QUDT_UNIT)
    if (isinstance(numbers, list) and len(numbers) == 1 and isinstance(units, list)
            and len(units) == 1 and isinstance(units[0], dict) and set(units[0]) == {"@id"}
            and set(item) - {"@id"} == {QUDT_NUMERIC_VALUE, QUDT_UNIT}):
        number = value_of(numbers[0])
        if number is not None and "@value" in numbers[0] and number.unit is None:
            # The number's own datatype is kept (a string or a language-tagged text is no
            # number); a number typed with a unit of its own beside qudt:unit states two
            # units, and is no value (above: None), never read in the one qudt:unit names.
            return Value(number.lexical, str(units[0]["@id"]), number.datatype)
    return None


def _lexical(raw: str | int | float) -> str:
    if isinstance(raw, float):
        # JSON numbers with a fraction or an exponent: their exact decimal text, never a
        # binary rounding of it.
        return number_text(raw)
    return str(raw)
