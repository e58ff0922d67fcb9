"""IRIs by RFC 3987: the one judge of what an absolute IRI is.

Every IRI the checker relies on (a node's ``@id``, a reference, a prefix's or a term's IRI in
a context, a registration's or an artifact's IRI) is held to the ``IRI`` production of
RFC 3987 here, by both engines, the audit and the loader (contract, rule 1): a scheme, a
hierarchical part, an optional query and an optional fragment, with nothing outside the
characters each part admits. A space, ``<>"{}|\\^`` and the backquote, a control character,
a bidirectional formatting character (RFC 3987 4.1: U+200E, U+200F, U+202A-U+202E, and the
isolates U+2066-U+2069 and U+061C, their kin), a percent sign not followed by two hexadecimal
digits, or a second ``#`` make a string no IRI.
"A space" is read as any white space, Unicode's included (U+00A0, U+2028, U+3000 and the
rest of Unicode's White_Space): RFC 3987's ``ucschar`` admits those, but the contract refuses
a space in an IRI, RFC 3987 (section 4.1) says white space is to be avoided, and pyld, which
the reference engine expands with, refuses them too, so both engines judge them alike.

The production is checked by cutting the string where RFC 3987 itself cuts it (the first
``#``, the first ``?``, the authority after ``//``) and matching each part against the
character class the ABNF gives it. Each step is one pass over its part, so the cost is linear
in the length whatever the input: a single regular expression of the whole grammar would
backtrack on hostile input, and the grammar libraries on PyPI were not usable here (see
docs/architecture.md, "IRIs"). The tests hold this function to an independent transcription
of the ABNF.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import functools
import re
from typing import NamedTuple

# RFC 3987, section 2.2.
_UCSCHAR = (
    "\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef"
    "\U00010000-\U0001fffd\U00020000-\U0002fffd\U00030000-\U0003fffd"
    "\U00040000-\U0004fffd\U00050000-\U0005fffd\U00060000-\U0006fffd"
    "\U00070000-\U0007fffd\U00080000-\U0008fffd\U00090000-\U0009fffd"
    "\U000a0000-\U000afffd\U000b0000-\U000bfffd\U000c0000-\U000cfffd"
    "\U000d0000-\U000dfffd\U000e1000-\U000efffd"
)
_IPRIVATE = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
_IUNRESERVED = "A-Za-z0-9\\-._~" + _UCSCHAR
_SUB_DELIMS = "!$&'()*+,;="
_PCT = "%[0-9A-Fa-f]{2}"


# The character class of each part of an IRI, as the ABNF gives it.
_IPCHAR = _IUNRESERVED + _SUB_DELIMS + ":@"
_CLASSES = {
    "path": _IPCHAR + "/",  # ipath-abempty, -absolute, -rootless and -empty, once cut
    "query": _IPCHAR + _IPRIVATE + "/?",
    "fragment": _IPCHAR + "/?",
    "userinfo": _IUNRESERVED + _SUB_DELIMS + ":",
    "host": _IUNRESERVED + _SUB_DELIMS,  # ireg-name: an IPv4address is one too
}


@functools.cache
def _run(part: str) -> "re.Pattern[str]":
    """The pattern of a run of characters of ``part``'s class or percent-escapes (no
    backtracking beyond one character: the escape begins with ``%``, which the class never
    holds). Compiled when first needed: each takes about 3 ms (their classes span the
    astral planes), a cold start's share, and a plain ASCII IRI needs none of them."""
    return re.compile(f"(?:[{_CLASSES[part]}]++|{_PCT})*+")


# RFC 3987 section 4.1: "IRIs MUST NOT contain bidirectional formatting characters (LRM,
# RLM, LRE, RLE, LRO, RLO, and PDF)"; the isolates Unicode added since (LRI, RLI, FSI, PDI)
# and the Arabic letter mark are their kin and are refused alike. Each would make an IRI read
# otherwise than it compares.
@functools.cache
def _bidi() -> "re.Pattern[str]":
    """The class of those characters, compiled when first needed (about half a millisecond
    of a cold start): none is ASCII, and most IRIs are."""
    return re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+\-.]*")
_PORT = re.compile("[0-9]*")
_WHITE_SPACE = re.compile(r"\s")
_IPVFUTURE = re.compile(r"[vV][0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+")


class IriDefect(NamedTuple):
    """Why a string is not an absolute IRI: what is wrong, and where (0-based)."""

    what: str
    position: int

    def describe(self) -> str:
        return f"{self.what} at character {self.position + 1}"


# The IRIs met most, in a production that is a strict part of RFC 3987's ``IRI``: a scheme,
# then either ``//`` and a host of unreserved ASCII characters and an absolute path, or a
# path that does not begin with ``//``; no user information, port, query or percent sign;
# an optional fragment. Every character class is a subset of the one RFC 3987 gives that
# part, so a string it matches has no defect (the tests hold it to the whole production),
# and anything else is judged part by part below. Possessive runs: linear on any input.
_PLAIN_ASCII = re.compile(
    r"[A-Za-z][A-Za-z0-9+\-.]*+:"
    r"(?://[A-Za-z0-9\-._~]*+(?:/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*+)?+"
    r"|(?!//)[A-Za-z0-9\-._~!$&'()*+,;=:@/]*+)"
    r"(?:#[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*+)?+")


def iri_defect(value: str) -> IriDefect | None:
    """None when ``value`` matches the ``IRI`` production of RFC 3987, else the first defect.

    A blank node identifier (``_:b0``) and a relative reference are not IRIs.
    """
    if _PLAIN_ASCII.fullmatch(value):
        return None
    return _defect(value)


def bidi_defect(value: str) -> IriDefect | None:
    """The first bidirectional formatting character of ``value`` (RFC 3987 4.1), or None:
    for IRIs a parser has held to the grammar already (a profile's Turtle), which allows
    them."""
    if value.isascii():
        return None
    bidi = _bidi().search(value)
    if bidi is None:
        return None
    return IriDefect(f"a bidirectional formatting character ({_name(bidi.group())}), which "
                     "RFC 3987 (4.1) excludes", bidi.start())


def shown_iri(value: str) -> str:
    """``value`` with its bidirectional formatting characters written as ``\\u`` escapes, for
    a message that names an IRI refused for them."""
    return _bidi().sub(lambda m: f"\\u{ord(m.group()):04x}", value)


def _defect(value: str) -> IriDefect | None:
    """:func:`iri_defect` by the whole production, part by part."""
    white = _WHITE_SPACE.search(value)
    if white is not None:
        return IriDefect(f"white space ({_name(white.group())})", white.start())
    bidi = bidi_defect(value)
    if bidi is not None:
        return bidi
    colon = value.find(":")
    if colon <= 0 or not _SCHEME.fullmatch(value, 0, colon):
        return IriDefect("no scheme (a relative reference, a blank node or an undefined prefix)",
                         0)
    end = len(value)
    hash_at = value.find("#", colon)
    if hash_at >= 0:
        bad = _bad(_run("fragment"), value, hash_at + 1, end)
        if bad is not None:
            return IriDefect(_character(value, bad, "the fragment"), bad)
        end = hash_at
    query_at = value.find("?", colon, end)
    if query_at >= 0:
        bad = _bad(_run("query"), value, query_at + 1, end)
        if bad is not None:
            return IriDefect(_character(value, bad, "the query"), bad)
        end = query_at
    start = colon + 1
    if value.startswith("//", start):
        slash = value.find("/", start + 2, end)
        authority_end = end if slash < 0 else slash
        defect = _authority(value, start + 2, authority_end)
        if defect is not None:
            return defect
        start = authority_end
    bad = _bad(_run("path"), value, start, end)
    if bad is not None:
        return IriDefect(_character(value, bad, "the path"), bad)
    return None


def is_absolute_iri(value: str) -> bool:
    return iri_defect(value) is None


def iri_scheme(value: str) -> str | None:
    """The scheme (lower case) of an absolute IRI, or None for anything that is not one."""
    if iri_defect(value) is not None:
        return None
    return value[:value.index(":")].lower()


def _bad(pattern: "re.Pattern[str]", value: str, start: int, end: int) -> int | None:
    """Where the run of ``pattern`` from ``start`` stops short of ``end``, or None."""
    matched = pattern.match(value, start, end)
    stop = matched.end() if matched else start
    return None if stop == end else stop


def _character(value: str, at: int, part: str) -> str:
    char = value[at]
    if char == "%":
        return f"a percent sign not followed by two hexadecimal digits in {part}"
    if char == "#":
        return "a second '#'"
    if char.isspace():
        return f"white space ({_name(char)}) in {part}"
    if ord(char) < 0x20 or 0x7f <= ord(char) < 0xa0:
        return f"a control character ({_name(char)}) in {part}"
    return f"the character {_name(char)}, which RFC 3987 does not allow in {part}"


def _name(char: str) -> str:
    return f"U+{ord(char):04X}" if not char.isprintable() or char.isspace() else repr(char)


def _authority(value: str, start: int, end: int) -> IriDefect | None:
    """``iauthority = [ iuserinfo "@" ] ihost [ ":" port ]`` between ``start`` and ``end``."""
    at = value.find("@", start, end)
    if at >= 0:
        bad = _bad(_run("userinfo"), value, start, at)
        if bad is not None:
            return IriDefect(_character(value, bad, "the user information"), bad)
        start = at + 1
    if value.startswith("[", start):
        close = value.find("]", start, end)
        if close < 0:
            return IriDefect("an IP literal without its closing ']'", start)
        literal = value[start + 1:close]
        if not _IPVFUTURE.fullmatch(literal):
            import ipaddress  # only an IP literal needs it (a cold start's 2 ms otherwise)

            try:
                ipaddress.IPv6Address(literal)
            except ValueError:
                return IriDefect("an IP literal that is not an IPv6 address", start)
            if "%" in literal:  # a zone identifier: RFC 6874, not RFC 3987
                return IriDefect("an IP literal that is not an IPv6 address", start)
        host_end = close + 1
        if host_end < end and value[host_end] != ":":
            return IriDefect(_character(value, host_end, "the authority"), host_end)
    else:
        colon = value.find(":", start, end)
        host_end = end if colon < 0 else colon
        bad = _bad(_run("host"), value, start, host_end)
        if bad is not None:
            return IriDefect(_character(value, bad, "the host"), bad)
    if host_end < end:
        bad = _bad(_PORT, value, host_end + 1, end)
        if bad is not None:
            return IriDefect(_character(value, bad, "the port"), bad)
    return None
