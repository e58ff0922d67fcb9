"""A differential fuzzer for envelopes (draft 6.2) and capability registrations (6.3).

The mutator starts from seed documents (the shipped examples, the envelopes of the data-driven
cases and of the public conformance cases, the registrations the cases offer) and applies a
few mutations at the JSON level (type swaps, deletions, duplicate members, keyword-like and
legacy keys, odd Unicode, unusual contexts, IRIs with excluded characters, blank nodes, bare
node references, empty and nested arrays) and at the byte level (truncation, inserted bytes,
trailing bytes, invalid UTF-8, a BOM, other encodings, equivalent re-serializations).

Each mutation says what the contract (/work/shared/CONTRACT.md, section 3) makes of it: the
input must be ``invalid`` (malformed: a duplicate key, an IRI with a space, an ``@foo`` key,
trailing garbage ...), must not be ``compatible`` (e.g. an ``@import``, a version string that
is not accepted), or nothing is known. A mutation that keeps the document's JSON value (an
escape, member order, whitespace) must not change the verdict or the codes.

Every input then goes through both engines and, for registrations, through the audit's
judging of one registration (and in batches, through the audit command, in two line orders).
:func:`run_envelope` and :func:`run_registration` return the failures found, each with a
*signature* (its failure class) so that a report can keep one minimized example per class.

Used by ``tests/test_differential_fuzz.py`` and ``bench/fuzz_report.py``.
"""

from __future__ import annotations

import contextlib
import copy
import io
import ipaddress
import json
import os
import random
import re
import tempfile
import traceback
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "cases"
FUZZ_CASES = CASES / "fuzz"
CONFORMANCE = ROOT.parent / "shared" / "conformance" / "cases"
if not CONFORMANCE.exists():
    CONFORMANCE = Path("/work/shared/conformance/cases")
SCHEMA_PATH = ROOT / "ioa_semantic" / "data" / "output.schema.json"
AT = datetime(2026, 6, 1, tzinfo=UTC)
AT_TEXT = "2026-06-01T00:00:00Z"

# What a mutation makes of the input, by the contract (strongest last).
NONE, NOT_COMPATIBLE, INVALID = 0, 1, 2
EXPECT_NAMES = {NONE: None, NOT_COMPATIBLE: "not-compatible", INVALID: "invalid"}
ALLOWED_SCHEMES = ("https", "http", "urn")

# --- RFC 3987: the IRI production ------------------------------------------------------------
#
# The ABNF transcribed rule by rule as one expression, as a reader checks it against the RFC:
# independent of ioa_semantic._iri, which cuts the string and matches its parts, so that the
# tests hold one to the other. Its backtracking is fine for the short strings of the tests.

# RFC 3987, section 2.2, and RFC 3986 for the rules it imports.
UCSCHAR = ("\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef" + "".join(
    f"{chr(plane << 16)}-{chr((plane << 16) + 0xfffd)}" for plane in range(1, 14))
    + "\U000e1000-\U000efffd")
IPRIVATE = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
UNRESERVED = "A-Za-z0-9\\-._~"
SUB_DELIMS = "!$&'()*+,;="
PCT = "%[0-9A-Fa-f]{2}"
IUNRESERVED = f"[{UNRESERVED}{UCSCHAR}]"
IPCHAR = f"(?:{IUNRESERVED}|{PCT}|[{SUB_DELIMS}:@])"
ISEGMENT = f"{IPCHAR}*"
ISEGMENT_NZ = f"{IPCHAR}+"
DEC_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])"
IPV4 = f"{DEC_OCTET}\\.{DEC_OCTET}\\.{DEC_OCTET}\\.{DEC_OCTET}"
IP_LITERAL = r"\[(?P<literal>[^\]]*)\]"  # the address itself is checked below
IREG_NAME = f"(?:{IUNRESERVED}|{PCT}|[{SUB_DELIMS}])*"
IHOST = f"(?:{IP_LITERAL}|{IPV4}|{IREG_NAME})"
IUSERINFO = f"(?:{IUNRESERVED}|{PCT}|[{SUB_DELIMS}:])*"
IAUTHORITY = f"(?:{IUSERINFO}@)?{IHOST}(?::[0-9]*)?"
IPATH_ABEMPTY = f"(?:/{ISEGMENT})*"
IPATH_ABSOLUTE = f"/(?:{ISEGMENT_NZ}(?:/{ISEGMENT})*)?"
IPATH_ROOTLESS = f"{ISEGMENT_NZ}(?:/{ISEGMENT})*"
IHIER_PART = f"(?://{IAUTHORITY}{IPATH_ABEMPTY}|{IPATH_ABSOLUTE}|{IPATH_ROOTLESS}|)"
IQUERY = f"(?:{IPCHAR}|[{IPRIVATE}]|[/?])*"
IFRAGMENT = f"(?:{IPCHAR}|[/?])*"
SCHEME = "[A-Za-z][A-Za-z0-9+\\-.]*"
IRI = re.compile(f"{SCHEME}:{IHIER_PART}(?:\\?{IQUERY})?(?:#{IFRAGMENT})?")
IPVFUTURE = re.compile(r"[vV][0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+")


# RFC 3987 4.1: "IRIs MUST NOT contain bidirectional formatting characters (LRM, RLM, LRE,
# RLE, LRO, RLO, and PDF)", with the isolates and the Arabic letter mark, their kin.
BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def is_iri(value: Any) -> bool:
    """True when ``value`` matches the ``IRI`` production of RFC 3987 and holds no white
    space (the contract's "a space", read as any: see ioa_semantic._iri) and no
    bidirectional formatting character (RFC 3987 4.1)."""
    if not isinstance(value, str) or any(char.isspace() or char in BIDI for char in value):
        return False
    match = IRI.fullmatch(value)
    if match is None:
        return False
    literal = match.group("literal")
    if literal is None:
        return True
    if IPVFUTURE.fullmatch(literal):
        return True
    try:
        ipaddress.IPv6Address(literal)
    except ValueError:
        return False
    return "%" not in literal


# --- a JSON tree that keeps duplicate members and raw escapes ---------------------------------


class Obj:
    """A JSON object as the list of its members, in order, duplicates kept."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[list[Any]] | None = None) -> None:
        self.pairs = [list(p) for p in pairs or []]

    def keys(self) -> list[str]:
        return [k for k, _ in self.pairs]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __contains__(self, key: object) -> bool:
        return any(k == key for k, _ in self.pairs)

    def has(self, key: str) -> bool:
        return any(k == key for k, _ in self.pairs)

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self.pairs:
            if k == key:
                return v
        return default

    def set(self, key: str, value: Any) -> None:
        for pair in self.pairs:
            if pair[0] == key:
                pair[1] = value
                return
        self.pairs.append([key, value])

    def delete(self, key: str) -> None:
        self.pairs = [p for p in self.pairs if p[0] != key]

    def rename(self, old: str, new: str) -> None:
        for pair in self.pairs:
            if pair[0] == old:
                pair[0] = new

    def __repr__(self) -> str:
        return f"Obj({self.pairs!r})"


@dataclass(frozen=True)
class Raw:
    """A JSON value written as given (``text``), whose value when parsed is ``value``."""

    text: str
    value: Any


def from_json(value: Any) -> Any:
    if isinstance(value, dict):
        return Obj([[k, from_json(v)] for k, v in value.items()])
    if isinstance(value, list):
        return [from_json(v) for v in value]
    return value


def _pairs_hook(pairs: list[tuple[str, Any]]) -> Obj:
    return Obj([list(p) for p in pairs])


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def _string(value: str, ascii_only: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii_only or _has_surrogate(value))


def dump(tree: Any, *, ascii_only: bool = False, indent: int | None = None,
         slash: bool = False, level: int = 0) -> str:
    """``tree`` as JSON text (duplicate members and raw values written as they are)."""
    pad = "" if indent is None else "\n" + " " * (indent * (level + 1))
    end = "" if indent is None else "\n" + " " * (indent * level)
    sep = ", " if indent is None else ","
    if isinstance(tree, Raw):
        return tree.text
    if isinstance(tree, Obj):
        if not tree.pairs:
            return "{}"
        items = [pad + _string(k, ascii_only) + ": " + dump(v, ascii_only=ascii_only,
                                                             indent=indent, slash=slash,
                                                             level=level + 1)
                 for k, v in tree.pairs]
        return "{" + sep.join(items) + end + "}"
    if isinstance(tree, list):
        if not tree:
            return "[]"
        return "[" + sep.join(pad + dump(v, ascii_only=ascii_only, indent=indent, slash=slash,
                                         level=level + 1) for v in tree) + end + "]"
    if isinstance(tree, str):
        text = _string(tree, ascii_only)
        return text.replace("/", "\\/") if slash else text
    return json.dumps(tree)


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def norm(tree: Any) -> Any:
    """A comparable form of a tree: member order ignored, duplicates kept."""
    if isinstance(tree, Raw):
        return norm(tree.value)
    if isinstance(tree, Obj):
        return ("{}", tuple(sorted(((k, norm(v)) for k, v in tree.pairs), key=repr)))
    if isinstance(tree, list):
        return ("[]", tuple(norm(v) for v in tree))
    if isinstance(tree, float) and tree == int(tree) and abs(tree) < 2 ** 53:
        return ("num", repr(tree))
    if isinstance(tree, bool) or tree is None:
        return ("lit", repr(tree))
    if isinstance(tree, int):
        return ("num", repr(float(tree)) if abs(tree) < 2 ** 53 else repr(tree))
    return ("str", tree) if isinstance(tree, str) else ("num", repr(tree))


def strict_parse(data: bytes, *, allow_bom: bool = False) -> tuple[Any, str | None]:
    """(tree, None) for a JSON text (RFC 8259, UTF-8) that holds one object with no
    duplicate member names; (None, why) otherwise."""
    if allow_bom and data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8"
    duplicate: list[str] = []

    def hook(pairs: list[tuple[str, Any]]) -> Obj:
        names = [k for k, _ in pairs]
        if len(names) != len(set(names)):
            duplicate.append("duplicate")
        return _pairs_hook(pairs)

    try:
        tree = json.loads(text, object_pairs_hook=hook, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        return None, f"not JSON: {str(exc)[:60]}"
    if duplicate:
        return None, "duplicate member"
    if not isinstance(tree, Obj):
        return None, "not an object"
    return tree, None


# --- seeds and their checkers ---------------------------------------------------------------


@dataclass(frozen=True)
class Setup:
    """The arguments of a check: profile, offered registrations and artifacts, params, instant."""

    name: str
    profile: str = "cs-translation"
    capabilities: tuple[str, ...] = ()
    alignments: tuple[str, ...] = ()
    params: tuple[tuple[str, str], ...] = ()
    at: datetime = AT

    @property
    def shipped_profile(self) -> bool:
        """The shipped profile: its policy (schemes, @vocab, @base, types, ignorable terms) is
        the contract's, so mutations that only it refuses can be marked."""
        return self.profile == "cs-translation"

    def args(self, base: Path | None = None) -> list[str]:
        """As command-line arguments, with file names relative to ``base``."""
        def name(path: str) -> str:
            if base is not None and os.path.exists(path):
                return os.path.basename(path)
            return path
        out = ["--profile", name(self.profile)]
        for c in self.capabilities:
            out += ["--capability", name(c)]
        for a in self.alignments:
            out += ["--alignment", name(a)]
        for k, v in self.params:
            out += ["--param", f"{k}={v}"]
        return [*out, "--at", self.at.isoformat().replace("+00:00", "Z")]

    def files(self) -> list[str]:
        return [p for p in (self.profile, *self.capabilities, *self.alignments)
                if os.path.exists(p)]


DEFAULT = Setup("default")


def setup_from_args(name: str, folder: Path, args: list[str]) -> Setup | None:
    opts: dict[str, list[str]] = {}
    for flag, value in zip(args[::2], args[1::2], strict=False):
        opts.setdefault(flag, []).append(value)
    if set(opts) - {"--profile", "--capability", "--alignment", "--param", "--at"}:
        return None  # limits, remote retrieval: not what this fuzzer varies
    if any(a.startswith(("http://", "https://")) for a in opts.get("--alignment", [])):
        return None

    def local(value: str) -> str:
        return str(folder / value) if (folder / value).exists() else value

    params = []
    for item in opts.get("--param", []):
        key, _, value = item.partition("=")
        params.append((key, value))
    at = datetime.fromisoformat(opts.get("--at", [AT_TEXT])[0].replace("Z", "+00:00"))
    return Setup(name, local(opts.get("--profile", ["cs-translation"])[0]),
                 tuple(local(c) for c in opts.get("--capability", [])),
                 tuple(local(a) for a in opts.get("--alignment", [])), tuple(params), at)


@dataclass(frozen=True)
class Seed:
    name: str
    kind: str  # "envelope" or "registration"
    text: str  # the seed's JSON text, compact
    setup: Setup

    @property
    def tree(self) -> Any:
        return from_json(json.loads(self.text))


def _strict_object(path: Path) -> dict[str, Any] | None:
    _tree, why = strict_parse(path.read_bytes())
    if why is not None:
        return None
    value = json.loads(path.read_bytes())
    return value if isinstance(value, dict) else None


def _remote_context(ctx: Any) -> bool:
    if isinstance(ctx, str):
        return True
    if isinstance(ctx, list):
        return any(_remote_context(c) for c in ctx)
    return isinstance(ctx, dict) and "@import" in json.dumps(ctx)


def _any_remote_context(value: Any) -> bool:
    """Whether any ``@context`` in the document, nested ones included, needs a retrieval:
    what its nodes mean is then not known, and malformed may read as unavailable (rule 12)."""
    if isinstance(value, dict):
        return any((key == "@context" and _remote_context(item)) or _any_remote_context(item)
                   for key, item in value.items())
    if isinstance(value, list):
        return any(_any_remote_context(item) for item in value)
    return False


@lru_cache(maxsize=1)
def load_seeds() -> tuple[Seed, ...]:
    """Every seed: envelopes with the setup of the case they come from, registrations."""
    seeds: list[Seed] = []
    seen: set[tuple[str, str]] = set()

    def add(name: str, kind: str, value: dict[str, Any] | None, setup: Setup) -> None:
        if value is None or _remote_context(value.get("@context")):
            return  # without its context nothing can be said of a document's terms
        text = json.dumps(value, ensure_ascii=False)
        if (text, setup.name if kind == "envelope" else "") in seen:
            return
        seen.add((text, setup.name if kind == "envelope" else ""))
        seeds.append(Seed(name, kind, text, setup))

    add("examples/envelope-6.2", "envelope",
        _strict_object(ROOT / "examples" / "envelope-6.2.jsonld"), DEFAULT)
    add("examples/registration-6.3", "registration",
        _strict_object(ROOT / "examples" / "registration-6.3.jsonld"), DEFAULT)
    add("examples/a2a/provider", "registration",
        _strict_object(ROOT / "examples" / "a2a" / "provider.jsonld"), DEFAULT)
    folders = sorted(p.parent for p in CASES.glob("*/*/case.json")
                     if p.parent.parent.name != "fuzz")
    if CONFORMANCE.exists():
        folders += sorted(p.parent for p in CONFORMANCE.glob("*/case.json"))
    for folder in folders:
        try:
            spec = json.loads((folder / "case.json").read_text(encoding="utf-8"))
        except ValueError:
            continue
        name = f"{folder.parent.name}/{folder.name}"
        setup = setup_from_args(name, folder, list(spec.get("args", [])))
        if setup is None or not (folder / str(spec.get("envelope", ""))).is_file():
            continue
        if setup.capabilities or setup.alignments or setup.params or not setup.shipped_profile:
            pass
        else:
            setup = DEFAULT
        add(name, "envelope", _strict_object(folder / spec["envelope"]), setup)
        for cap in setup.capabilities:
            add(f"{name}/{os.path.basename(cap)}", "registration",
                _strict_object(Path(cap)), DEFAULT)
    return tuple(seeds)


class Engines:
    """Checkers per setup, built once: a warm compiled and reference pair (no cache)."""

    def __init__(self) -> None:
        self._warm: dict[Setup, tuple[Any, Any] | None] = {}

    def pair(self, setup: Setup) -> tuple[Any, Any] | None:
        if setup not in self._warm:
            try:
                self._warm[setup] = (self.fresh(setup, "compiled"),
                                     self.fresh(setup, "reference"))
            except Exception:  # a configuration error: the seed is not usable
                self._warm[setup] = None
        return self._warm[setup]

    @staticmethod
    def fresh(setup: Setup, engine: str = "compiled") -> Any:
        from ioa_semantic import Checker

        return Checker(setup.profile, engine=engine, cache_size=0,
                       capabilities=list(setup.capabilities), alignments=list(setup.alignments))


ENGINES = Engines()


def usable_seeds(kind: str | None = None) -> list[Seed]:
    return [s for s in load_seeds() if (kind is None or s.kind == kind)
            and ENGINES.pair(s.setup if s.kind == "envelope" else DEFAULT) is not None]


# --- the mutations --------------------------------------------------------------------------

ROLE_IRI_KEYS = {
    "envelope": ("@id", "@type", "ontologyId", "intentRef", "capabilityRefs", "alignmentRef"),
    "context": ("@id", "@type", "domain"),
    "binding": ("@id", "@type", "sense"),
    "registration": ("@id", "@type", "ontologyId", "providedBy"),
}
ROLE_REQUIRED = {
    "envelope": ("@context", "@type", "ontologyId", "ontologyVersion", "capabilityRefs",
                 "intentRef"),
    "context": ("@type",),
    "binding": ("@type", "term", "sense"),
    "registration": ("@context", "@id", "@type", "inputs", "outputs"),
}
ROLE_SINGLE = {
    "envelope": ("ontologyId", "ontologyVersion", "intentRef", "alignmentRef", "profileVersion",
                 "profileContext"),
    "context": ("domain", "sourceLang", "targetLang"),
    "binding": ("term", "sense"),
    "registration": ("ontologyId", "ontologyVersion"),
}
ROLE_NODES = {"envelope": ("profileContext",), "context": ("termBindings",)}
LITERAL_REQUIRED = {("envelope", "ontologyVersion"), ("binding", "term")}
MEDIA_KEYS = {"registration": ("inputs", "outputs")}
BASELINE_TERMS = ("ontologyId", "ontologyVersion", "capabilityRefs", "intentRef", "alignmentRef",
                  "domain", "sense", "profileContext", "termBindings", "term", "profileVersion",
                  "inputs", "outputs", "sourceLang", "targetLang", "providedBy", "label")

EXCLUDED = [" ", "<", ">", '"', "{", "}", "|", "\\", "^", "`", "\x00", "\x01", "\t", "\n",
            "\x1f", "\x7f", "\x80", "\x85", "\x9f", "%zz", "%4", "%", "%G1", "\ud800", "\udfff",
            "\ufffe", "\uffff", "\ufdd0", "\U0001fffe", "[", "]"]
VALID_ODD_IRIS = ["https://example.org/onto/cs#Tech\u0301", "https://example.org/onto/cs#\u200fx",
                  "https://example.org/onto/cs#\U0001f600", "https://example.org/%41",
                  "https://xn--r8jz45g.jp/x", "https://\u4f8b\u3048.jp/x", "urn:example:\u00e9",
                  "https://example.org/x?q=\ue000#f",
                  "https://example.org/onto/cs#a?b", "http://[::1]/x", "urn:ietf:rfc:3987"]
ODD_CHARS = ["\x00", "\u200f", "\u202e", "\u0301", "\U0001f600", "\u2028", "\ufeff", "\ufffe",
             "\ud800", "\udc00", "\x7f", "\u00a0", " "]
KEYWORD_KEYS = ["@note", "@foo", "@ID", "@", "@1", "@Type", "@id ", "@context1"]


@dataclass
class Effect:
    op: str
    expect: int
    path: tuple[Any, ...]


@dataclass
class Mutant:
    seed: Seed
    ops: list[tuple[str, int]]
    data: bytes
    kind: str
    setup: Setup
    effects: list[Effect] = field(default_factory=list)
    expect: int = NONE
    expect_op: str | None = None
    equivalent: bytes | None = None  # bytes of a document with the same JSON value
    tree: Any = None

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "backslashreplace")

    def describe(self) -> dict[str, Any]:
        return {"seed": self.seed.name, "kind": self.kind, "setup": self.setup.name,
                "args": self.setup.args(), "ops": [list(o) for o in self.ops],
                "effects": [e.op for e in self.effects],
                "expected": EXPECT_NAMES[self.expect], "expected_because": self.expect_op,
                "input": self.text, "input_bytes_hex": self.data.hex()
                if not _utf8(self.data) else None}


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


class Doc:
    """The document being mutated, with what the mutations need to know about it."""

    def __init__(self, tree: Any, kind: str, setup: Setup) -> None:
        self.tree = tree
        self.kind = kind
        self.setup = setup

    # the data nodes, their roles and paths (the @context left aside)
    def nodes(self) -> list[tuple[tuple[Any, ...], Obj, str]]:
        found: list[tuple[tuple[Any, ...], Obj, str]] = []

        def visit(node: Any, path: tuple[Any, ...], role: str) -> None:
            if not isinstance(node, Obj):
                return
            found.append((path, node, role))
            for key in ROLE_NODES.get(role, ()):
                value = node.get(key)
                child = "context" if key == "profileContext" else "binding"
                items = value if isinstance(value, list) else [value]
                for i, item in enumerate(items):
                    visit(item, (*path, key, i) if isinstance(value, list) else (*path, key),
                          child)

        visit(self.tree, (), self.kind)
        return found

    def contexts(self) -> list[tuple[tuple[Any, ...], Obj]]:
        ctx = self.tree.get("@context") if isinstance(self.tree, Obj) else None
        if isinstance(ctx, Obj):
            return [(("@context",), ctx)]
        if isinstance(ctx, list):
            return [(("@context", i), c) for i, c in enumerate(ctx) if isinstance(c, Obj)]
        return []

    def prefixes(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for _, ctx in self.contexts():
            for k, v in ctx.pairs:
                if isinstance(v, str) and not k.startswith("@") and v[-1:] in "#/:?[]@":
                    found[k] = v
        return found

    def base(self) -> str | None:
        """The @base a context of the document sets (the last one), if any."""
        found = None
        for _, ctx in self.contexts():
            for k, v in ctx.pairs:
                if k == "@base" and isinstance(v, str):
                    found = v
        return found

    def expand(self, value: str) -> str:
        prefix, sep, rest = value.partition(":")
        if sep and not rest.startswith("//"):
            base = self.prefixes().get(prefix)
            if base is not None:
                return base + rest
        base = self.base()
        if base is not None and not is_iri(value) and is_iri(base):
            # A relative reference resolves against the context's @base (RFC 3986 section 5,
            # as JSON-LD does): where the profile allows @base, it is absolute then.
            return urllib.parse.urljoin(base, value)
        return value

    def iri_expect(self, value: Any, role: str, key: str) -> int:
        """What the contract makes of ``value`` where an IRI is required."""
        if not isinstance(value, str):
            return INVALID
        if value.startswith("_:"):
            # a blank node where an absolute IRI is required; a binding's or a profileContext's
            # own @id may be one
            return NONE if key == "@id" and role in ("context", "binding") else INVALID
        expanded = self.expand(value)
        if not is_iri(expanded):
            return INVALID
        scheme = expanded.partition(":")[0]
        if self.setup.shipped_profile and scheme not in ALLOWED_SCHEMES:
            return INVALID if scheme == scheme.lower() else NONE
        return NONE


# (path, container, slot, role, key): where a string value stands, and under what.
Position = tuple[tuple[Any, ...], Any, Any, str, str]


def _positions(doc: Doc, keys_of: Mapping[str, tuple[str, ...]]) -> list[Position]:
    """(path, container, slot, role, key) of every string value under the keys named."""
    out: list[Position] = []
    for path, node, role in doc.nodes():
        for key in keys_of.get(role, ()):
            value = node.get(key)
            if isinstance(value, str):
                out.append(((*path, key), node, key, role, key))
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, str):
                        out.append(((*path, key, i), value, i, role, key))
    return out


def _put(container: Any, slot: Any, value: Any) -> None:
    if isinstance(container, Obj):
        container.set(slot, value)
    else:
        container[slot] = value


def _json_string(value: str) -> Any:
    """A string, or a raw escape for one holding a lone surrogate."""
    return Raw(json.dumps(value), value) if _has_surrogate(value) else value


Op = Callable[[Doc, random.Random], Effect | None]


def op_iri_excluded(doc: Doc, rng: random.Random) -> Effect | None:
    spots = _positions(doc, ROLE_IRI_KEYS)
    if not spots:
        return None
    path, container, slot, role, key = rng.choice(spots)
    value = container.get(slot) if isinstance(container, Obj) else container[slot]
    char = rng.choice(EXCLUDED)
    where = rng.choice([len(value), rng.randint(0, len(value)), value.find(":") + 1])
    new = value[:where] + char + value[where:]
    _put(container, slot, _json_string(new))
    return Effect(f"iri-excluded-char({char!r})", doc.iri_expect(new, role, key), path)


def op_iri_second_hash(doc: Doc, rng: random.Random) -> Effect | None:
    spots = _positions(doc, ROLE_IRI_KEYS)
    if not spots:
        return None
    path, container, slot, role, key = rng.choice(spots)
    value = container.get(slot) if isinstance(container, Obj) else container[slot]
    new = value + ("#x" if "#" in doc.expand(value) else "#a#b")
    _put(container, slot, new)
    return Effect("iri-second-hash", doc.iri_expect(new, role, key), path)


def op_iri_replace(doc: Doc, rng: random.Random) -> Effect | None:
    spots = _positions(doc, ROLE_IRI_KEYS)
    if not spots:
        return None
    path, container, slot, role, key = rng.choice(spots)
    kind, new = rng.choice([
        ("blank-node", "_:b0"), ("blank-node", "_:x"), ("relative", "TechTranslation"),
        ("relative", "x/y"), ("relative", "#frag"), ("relative", ""), ("relative", "//host/x"),
        ("undefined-prefix", "zz:Tech"), ("undefined-prefix", "ioa2:SemanticProfile"),
        ("scheme", "ftp://example.org/x"), ("scheme", "file:///etc/passwd"),
        ("scheme", "mailto:a@example.org"), ("scheme", "did:example:123"),
        ("scheme", "javascript:alert(1)"), ("scheme-case", "HTTPS://example.org/x"),
        *[("valid-odd", v) for v in VALID_ODD_IRIS]])
    _put(container, slot, _json_string(new))
    return Effect(f"iri-{kind}", doc.iri_expect(new, role, key), path)


def op_envelope_id(doc: Doc, rng: random.Random) -> Effect | None:
    value = rng.choice(["https://example.org/envelopes/1", "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66",
                        "_:b0", "_:", "rel", "", "ftp://example.org/e", "https://example.org/e 1",
                        "https://example.org/e#1#2"])
    doc.tree.set("@id", value)
    return Effect("top-level-@id", doc.iri_expect(value, doc.kind, "@id"), ("@id",))


SWAPS = ["null", "empty-list", "number", "float", "bool", "object-empty", "object-ref",
         "string", "list-of-one", "nested-list", "list-of-two-equal"]


def _swap_value(kind: str, old: Any) -> Any:
    return {"null": None, "empty-list": [], "number": 5, "float": 1.5, "bool": True,
            "object-empty": Obj(), "object-ref": Obj([["@id", "https://example.org/x"]]),
            "string": "x", "list-of-one": [old], "nested-list": [[old]],
            "list-of-two-equal": [old, copy.deepcopy(old)]}[kind]


def _swap_expect(role: str, key: str, kind: str, old: Any, doc: Doc) -> int:
    iri_key = key in ROLE_IRI_KEYS.get(role, ())
    required = key in ROLE_REQUIRED.get(role, ())
    node_key = key in ROLE_NODES.get(role, ())
    literal = (role, key) in LITERAL_REQUIRED or key in MEDIA_KEYS.get(role, ())
    if kind in ("list-of-one", "nested-list", "list-of-two-equal"):
        return NONE
    if kind in ("null", "empty-list"):
        return INVALID if required else NONE
    if key in ("@id", "@type"):
        if kind == "object-ref" and key == "@type":
            return INVALID
        if kind == "string":
            return doc.iri_expect("x", role, key) if key == "@id" else INVALID
        return INVALID
    if iri_key:
        if kind == "object-ref":
            return NONE
        if kind == "string":
            return doc.iri_expect("x", role, key)  # relative: absolute under an allowed @base
        return INVALID
    if node_key:
        return INVALID  # a number, a string, an empty node, a bare node reference
    if literal:
        if kind == "string":
            return (NOT_COMPATIBLE if key == "ontologyVersion" else
                    INVALID if key in MEDIA_KEYS.get(role, ()) else NONE)
        return INVALID
    return NONE


def op_type_swap(doc: Doc, rng: random.Random) -> Effect | None:
    spots = [(path, node, role, k) for path, node, role in doc.nodes() for k in node
             if k != "@context"]
    if not spots:
        return None
    path, node, role, key = rng.choice(spots)
    kind = rng.choice(SWAPS)
    old = node.get(key)
    node.set(key, _swap_value(kind, old))
    return Effect(f"type-swap({key}->{kind})", _swap_expect(role, key, kind, old, doc),
                  (*path, key))


def op_delete_member(doc: Doc, rng: random.Random) -> Effect | None:
    spots = [(path, node, role, k) for path, node, role in doc.nodes() for k in node]
    if not spots:
        return None
    path, node, role, key = rng.choice(spots)
    node.delete(key)
    expect = INVALID if key in ROLE_REQUIRED.get(role, ()) else NONE
    return Effect(f"delete({role}.{key})", expect, (*path, key))


def op_delete_definition(doc: Doc, rng: random.Random) -> Effect | None:
    contexts = doc.contexts()
    if not contexts:
        return None
    path, ctx = rng.choice(contexts)
    keys = [k for k in ctx if not k.startswith("@")]
    if not keys:
        return None
    key = rng.choice(keys)
    text_before = dump(doc.tree)
    ctx.delete(key)
    used_as_key = any(node.has(key) for _, node, _ in doc.nodes())
    used_as_prefix = f'"{key}:' in text_before and key not in {
        k for _, c in doc.contexts() for k in c}
    expect = INVALID if used_as_key or used_as_prefix else NONE
    return Effect(f"delete-definition({key})", expect, (*path, key))


def op_duplicate_member(doc: Doc, rng: random.Random) -> Effect | None:
    objects: list[tuple[tuple[Any, ...], Obj]] = []

    def visit(node: Any, path: tuple[Any, ...]) -> None:
        if isinstance(node, Obj):
            if node.pairs:
                objects.append((path, node))
            for k, v in node.pairs:
                visit(v, (*path, k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                visit(v, (*path, i))

    visit(doc.tree, ())
    path, node = rng.choice(objects)
    i = rng.randrange(len(node.pairs))
    key, value = node.pairs[i]
    twin = copy.deepcopy(value) if rng.random() < 0.5 else "other"
    node.pairs.insert(rng.randint(0, len(node.pairs)), [key, twin])
    return Effect(f"duplicate-member({key})", INVALID, path)


def op_keyword_key(doc: Doc, rng: random.Random) -> Effect | None:
    path, node, _role = rng.choice(doc.nodes())
    key = rng.choice(KEYWORD_KEYS)
    if node.has(key):
        return None
    node.set(key, rng.choice(["a note", 1, Obj(), ["x"]]))
    return Effect(f"keyword-like-key({key})", INVALID if doc.setup.shipped_profile else NONE,
                  (*path, key))


def op_colon_key(doc: Doc, rng: random.Random) -> Effect | None:
    path, node, _role = rng.choice(doc.nodes())
    key, expect = rng.choice([("cs:extra", NONE), ("zz:extra", NONE),
                              ("https://example.org/p", NONE), ("_:b0", NONE),
                              ("https://example.org/p q", INVALID),
                              ("https://example.org/p<q>", INVALID),
                              ("https://example.org/p%zz", INVALID), (":x", NONE),
                              ("x:", NONE)])
    if node.has(key):
        return None
    node.set(key, "value")
    return Effect(f"colon-key({key})", expect, (*path, key))


def op_legacy_key(doc: Doc, rng: random.Random) -> Effect | None:
    spots = [(path, node, role) for path, node, role in doc.nodes()]
    path, node, _role = rng.choice(spots)
    how = rng.choice(["rename-id", "rename-type", "add-type", "add-id"])
    if how == "rename-id" and node.has("@id"):
        node.rename("@id", "id")
    elif how == "rename-type" and node.has("@type"):
        node.rename("@type", "type")
    elif how == "add-type" and not node.has("type"):
        node.set("type", node.get("@type", "ioa:SemanticProfile"))
    elif how == "add-id" and not node.has("id"):
        node.set("id", "https://example.org/e")
    else:
        return None
    # The path is the key the legacy spelling stands at, so that a later mutation of that
    # key (deleting the "id" just added, say) voids what this one implied.
    return Effect(f"legacy-key({how})", INVALID, (*path, "id" if how.endswith("-id") else "type"))


def op_odd_unicode(doc: Doc, rng: random.Random) -> Effect | None:
    keys = {"envelope": ("ontologyVersion", "profileVersion", "label"),
            "context": ("sourceLang", "targetLang", "label"),
            "binding": ("term", "label"), "registration": ("label", "ontologyVersion")}
    spots = _positions(doc, keys)
    if not spots:
        return None
    path, container, slot, role, key = rng.choice(spots)
    value = container.get(slot) if isinstance(container, Obj) else container[slot]
    char = rng.choice(ODD_CHARS)
    where = rng.randint(0, len(value))
    new = value[:where] + char + value[where:]
    _put(container, slot, _json_string(new))
    expect = NOT_COMPATIBLE if (role, key) == ("envelope", "ontologyVersion") else NONE
    return Effect(f"odd-unicode({key},{char!r})", expect, path)


def op_blank_string(doc: Doc, rng: random.Random) -> Effect | None:
    spots = _positions(doc, {"envelope": ("ontologyVersion",), "binding": ("term",)})
    if not spots:
        return None
    path, container, slot, _role, key = rng.choice(spots)
    new = rng.choice(["", " ", "\t", "\u00a0", "\u3000", "\u2028", "\ufeff"])
    _put(container, slot, new)
    # empty or blank: the contract (version strings) and the project's cases (terms)
    expect = INVALID if new in ("", " ", "\t", "\u00a0", "\u3000", "\u2028") else NONE
    return Effect(f"blank-string({key},{new!r})", expect, path)


def _main_context(doc: Doc, rng: random.Random) -> tuple[tuple[Any, ...], Obj] | None:
    contexts = doc.contexts()
    return contexts[0] if contexts and rng.random() < 0.7 else (
        rng.choice(contexts) if contexts else None)


def op_context_iri_key(doc: Doc, rng: random.Random) -> Effect | None:
    found = _main_context(doc, rng)
    if found is None:
        return None
    path, ctx = found
    key, value = rng.choice([
        ("https://example.org/ioa/semantic#intentRef",
         Obj([["@id", "https://example.org/other#x"], ["@type", "@id"]])),
        ("ioa:intentRef", "https://example.org/other#x"),
        ("cs:TechTranslation", "https://evil.example/x"),
        ("https://example.org/onto/cs#TechTranslation", "https://evil.example/x"),
        ("ioa:sense", Obj([["@id", "ioa:domain"], ["@type", "@id"]])),
    ])
    ctx.set(key, value)
    return Effect(f"context-iri-term-key({key})", INVALID, (*path, key))


def op_context_term_id(doc: Doc, rng: random.Random) -> Effect | None:
    found = _main_context(doc, rng)
    if found is None:
        return None
    path, ctx = found
    used = [t for t in BASELINE_TERMS if any(node.has(t) for _, node, _ in doc.nodes())]
    if not used:
        return None
    term = rng.choice(used)
    value: object = rng.choice([[], Obj(), 5, None, "", "_:b", "@type", "@id", "ioa:other",
                        "https://example.org/ioa/semantic#other", "@vocab", "cs:x"])
    old = ctx.get(term)
    definition = Obj([["@id", value]])
    if isinstance(old, Obj) and old.has("@type"):
        definition.set("@type", old.get("@type"))
    ctx.set(term, definition)
    return Effect(f"context-term-@id({term},{value!r})", INVALID, (*path, term))


@lru_cache(maxsize=1)
def baseline_definitions() -> dict[str, tuple[str, str | None, str | None]]:
    """The 6.1 context's terms: (IRI, type coercion, container)."""
    baseline = ROOT / "ioa_semantic" / "data" / "contexts" / "baseline.jsonld"
    ctx = json.loads(baseline.read_text())["@context"]
    prefixes = {k: v for k, v in ctx.items() if isinstance(v, str) and v.endswith("#")}

    def full(value: str) -> str:
        prefix, _, rest = value.partition(":")
        return prefixes[prefix] + rest if prefix in prefixes else value

    out: dict[str, tuple[str, str | None, str | None]] = {}
    for term, value in ctx.items():
        if term.startswith("@") or term in prefixes:
            continue
        if isinstance(value, str):
            out[term] = (full(value), None, None)
        else:
            out[term] = (full(value["@id"]), value.get("@type"), value.get("@container"))
    return out


def _definition_expect(doc: Doc, term: str, definition: Any) -> int:
    """INVALID unless ``definition`` equals the baseline's (IRI, coercion, container)."""
    baseline = baseline_definitions().get(term)
    if baseline is None:
        return NONE
    if isinstance(definition, str):
        found = (doc.expand(definition), None, None)
        extra: set[str] = set()
    elif isinstance(definition, Obj):
        iri = definition.get("@id")
        found = (doc.expand(iri) if isinstance(iri, str) else repr(iri),
                 definition.get("@type"), definition.get("@container"))
        extra = set(definition.keys()) - {"@id", "@type", "@container", "@protected"}
    else:
        return INVALID
    if extra or found[:2] != baseline[:2]:
        return INVALID
    if found[2] != baseline[2]:
        # @set where the baseline has none (or the reverse) changes nothing in expansion
        return NONE if {found[2], baseline[2]} <= {None, "@set"} else INVALID
    return NONE


def op_context_term_definition(doc: Doc, rng: random.Random) -> Effect | None:
    found = _main_context(doc, rng)
    if found is None:
        return None
    path, ctx = found
    used = [t for t in BASELINE_TERMS if any(node.has(t) for _, node, _ in doc.nodes())
            and ctx.has(t)]
    if not used:
        return None
    term = rng.choice(used)
    old = ctx.get(term)
    iri = baseline_definitions()[term][0]
    base = Obj(copy.deepcopy(old.pairs)) if isinstance(old, Obj) else Obj([["@id", old]])
    how = rng.choice(["null", "absolute-iri-same", "coercion-flipped", "type-vocab",
                      "container-list", "container-set", "scoped-context", "protected-false",
                      "reverse", "other-iri", "string-form"])
    value: Any = base
    if how == "null":
        value = None
    elif how == "absolute-iri-same":
        base.set("@id", iri)
    elif how == "coercion-flipped":
        if base.get("@type") == "@id":
            base.delete("@type")
        else:
            base.set("@type", "@id")
    elif how == "type-vocab":
        base.set("@type", "@vocab")
    elif how == "container-list":
        base.set("@container", "@list")
    elif how == "container-set":
        base.set("@container", "@set")
    elif how == "scoped-context":
        base.set("@context", Obj([["cs", "https://evil.example/"]]))
    elif how == "protected-false":
        base.set("@protected", False)
    elif how == "reverse":
        value = Obj([["@reverse", iri]])
    elif how == "other-iri":
        base.set("@id", iri + "X")
    elif how == "string-form":
        value = iri
    ctx.set(term, value)
    return Effect(f"context-definition({term},{how})", _definition_expect(doc, term, value),
                  (*path, term))


def op_context_keyword(doc: Doc, rng: random.Random) -> Effect | None:
    found = _main_context(doc, rng)
    if found is None:
        return None
    path, ctx = found
    shipped = doc.setup.shipped_profile
    key, value, expect = rng.choice([
        ("@vocab", "https://example.org/ioa/semantic#", INVALID if shipped else NONE),
        ("@vocab", "", INVALID if shipped else NONE),
        ("@vocab", "cs:", INVALID if shipped else NONE),
        ("@base", "https://example.org/onto/cs#", INVALID if shipped else NONE),
        ("@base", None, NONE),
        ("@import", "https://example.org/ctx.jsonld", NOT_COMPATIBLE),
        ("@import", "ctx.jsonld", NOT_COMPATIBLE),
        ("@protected", False, INVALID),
        ("@version", 1.0, INVALID),
        ("@version", "1.1", INVALID),
        ("@language", "en", NONE),
        ("@propagate", False, NONE),
        ("@foo", "x", NONE),
        ("@", "x", NONE),
    ])
    if ctx.has(key) and ctx.get(key) == value:
        return None
    ctx.set(key, value)
    return Effect(f"context-keyword({key}={value!r})", expect, (*path, key))


def op_context_prefix_iri(doc: Doc, rng: random.Random) -> Effect | None:
    found = _main_context(doc, rng)
    if found is None:
        return None
    path, ctx = found
    prefixes = [k for k, v in ctx.pairs if isinstance(v, str) and not k.startswith("@")]
    if rng.random() < 0.3 or not prefixes:
        key, value = "zz", "https://example.org/zz#"
    else:
        key = rng.choice(prefixes)
        value = ctx.get(key)
    char = rng.choice(EXCLUDED)
    where = rng.randint(value.find(":") + 1, len(value))
    new = value[:where] + char + value[where:]
    ctx.set(key, _json_string(new))
    expect = INVALID if not is_iri(new) else NONE
    return Effect(f"context-prefix-iri({key},{char!r})", expect, (*path, key))


def op_context_redefine(doc: Doc, rng: random.Random) -> Effect | None:
    """A second context after the first: a redefinition, a null, an empty one, the same."""
    ctx = doc.tree.get("@context")
    if ctx is None:
        return None
    first = ctx if not isinstance(ctx, list) else ctx[0] if ctx else None
    how, value, expect, equivalent = rng.choice([
        ("array-of-one", [ctx] if not isinstance(ctx, list) else None, NONE, True),
        ("append-empty", "append", NONE, True),
        ("append-null", "append-null", INVALID, False),
        ("prepend-null", "prepend-null", NONE, False),
        ("append-same", "append-same", NONE, False),
        ("redefine-intentRef", Obj([["intentRef", Obj([["@id", "ioa:other"], ["@type", "@id"]])]]),
         INVALID, False),
        ("redefine-ioa", Obj([["ioa", "https://evil.example/ns#"]]), INVALID, False),
        ("redefine-cs", Obj([["cs", "https://evil.example/cs#"]]), NOT_COMPATIBLE, False),
        ("remote-string", "https://example.org/ctx.jsonld", NOT_COMPATIBLE, False),
    ])
    items = list(ctx) if isinstance(ctx, list) else [ctx]
    if how == "array-of-one":
        if value is None:
            return None
        new: Any = value
    elif value == "append":
        new = [*items, Obj()]
    elif value == "append-null":
        new = [*items, None]
    elif value == "prepend-null":
        new = [None, *items]
    elif value == "append-same":
        if first is None:
            return None
        new = [*items, copy.deepcopy(first)]
    else:
        new = [*items, value]
    if how == "redefine-cs" and not (isinstance(first, Obj) and "cs" in first):
        # A seed that names no cs prefix (the law profile's registrations) relies on none:
        # a second context defining one changes nothing the document says.
        expect = NONE
    doc.tree.set("@context", new)
    effect = Effect(f"context-array({how})", expect, ("@context",))
    effect.equivalent = equivalent  # type: ignore[attr-defined]
    return effect


def op_bare_reference(doc: Doc, rng: random.Random) -> Effect | None:
    targets = [(path, node, role) for path, node, role in doc.nodes()
               if role in ("context", "binding")]
    if not targets:
        return None
    path, _, role = rng.choice(targets)
    ref = Obj([["@id", rng.choice(["https://example.org/ctx/1", "_:b1", "cs:LargeLanguageModel"])]])
    _set_path(doc.tree, path, ref)
    return Effect(f"bare-node-reference({role})", INVALID, path)


def _set_path(tree: Any, path: tuple[Any, ...], value: Any) -> None:
    node = tree
    for step in path[:-1]:
        node = node.get(step) if isinstance(node, Obj) else node[step]
    _put(node, path[-1], value)


def op_empty_or_nested_array(doc: Doc, rng: random.Random) -> Effect | None:
    spots = [(path, node, role, k) for path, node, role in doc.nodes() for k in node
             if k != "@context"]
    path, node, role, key = rng.choice(spots)
    how = rng.choice(["empty", "nested", "nested-empty", "two-values"])
    old = node.get(key)
    if how == "empty":
        node.set(key, [])
        expect = INVALID if key in ROLE_REQUIRED.get(role, ()) else NONE
    elif how == "nested":
        node.set(key, [[old]] if not isinstance(old, list) else [old])
        expect = NONE if key != "@type" else INVALID
    elif how == "nested-empty":
        node.set(key, [[]])
        expect = INVALID if key in ROLE_REQUIRED.get(role, ()) else NONE
    else:
        if not isinstance(old, str):
            return None
        other = ("2.0" if key == "ontologyVersion" else "Other" if key == "term"
                 else doc.expand(old) + "2" if ":" in old else old + "2")
        node.set(key, [old, other])
        expect = INVALID if key in ROLE_SINGLE.get(role, ()) or key == "@id" else NONE
    return Effect(f"array({key},{how})", expect, (*path, key))


def op_media_type(doc: Doc, rng: random.Random) -> Effect | None:
    spots = _positions(doc, MEDIA_KEYS)
    if not spots:
        return None
    path, container, slot, _role, _key = rng.choice(spots)
    new, expect = rng.choice([("text plain", INVALID), ("text/", INVALID), ("/plain", INVALID),
                              ("", INVALID), ("text", INVALID), ("text//plain", INVALID),
                              ("text/plain/x", INVALID), ("t\u00e9xt/plain", INVALID),
                              ("text/pl\x00ain", INVALID), ("Text/Plain", NONE),
                              ("application/ld+json", NONE), ("text/plain; charset=utf-8", NONE),
                              ("text/plain\u2028", INVALID)])
    _put(container, slot, new)
    return Effect(f"media-type({new!r})", expect, path)


JSON_OPS: dict[str, tuple[Op, float]] = {
    "iri-excluded": (op_iri_excluded, 3.0),
    "iri-second-hash": (op_iri_second_hash, 0.7),
    "iri-replace": (op_iri_replace, 2.0),
    "top-level-id": (op_envelope_id, 0.7),
    "type-swap": (op_type_swap, 2.5),
    "delete-member": (op_delete_member, 1.5),
    "delete-definition": (op_delete_definition, 0.8),
    "duplicate-member": (op_duplicate_member, 1.0),
    "keyword-key": (op_keyword_key, 1.0),
    "colon-key": (op_colon_key, 0.7),
    "legacy-key": (op_legacy_key, 0.8),
    "odd-unicode": (op_odd_unicode, 1.2),
    "blank-string": (op_blank_string, 0.5),
    "context-iri-key": (op_context_iri_key, 0.7),
    "context-term-id": (op_context_term_id, 1.0),
    "context-definition": (op_context_term_definition, 1.2),
    "context-keyword": (op_context_keyword, 1.0),
    "context-prefix-iri": (op_context_prefix_iri, 1.0),
    "context-array": (op_context_redefine, 1.0),
    "bare-reference": (op_bare_reference, 0.7),
    "array": (op_empty_or_nested_array, 1.2),
    "media-type": (op_media_type, 1.0),
}

# --- byte-level mutations -------------------------------------------------------------------

TRAILING = [b"\x0c", b"\x00", b"\xc2\xa0", b"\xe2\x80\xa8", b"\xe2\x80\xa9", b"\x0b", b"x",
            b"{}", b"]", b",", b" \t\r\n", b"\xff", b"\xef\xbb\xbf", b"\x85", b"\xc2\x85",
            b"\x1c", b"\x1e", b"\xe3\x80\x80", b"//", b"/* */", b"\x00\x00", b"\r", b"\n\n"]
INSERTED = [b"\x00", b"\x0c", b"\xa0", b"\xff", b"\xc0\xaf", b"\x80", b"\xed\xa0\x80",
            b"\xef\xbb\xbf", b"\xe2\x80\xa8", b" ", b"\n", b"\"", b",", b"}", b"\\", b"\x1f",
            b"\xf4\x90\x80\x80", b"\xf0\x9f\x98"]


@dataclass
class ByteEffect:
    op: str
    data: bytes
    bom: bool = False
    equivalent: bool = False  # the same JSON value by construction (an expectation kept)


def byte_op(data: bytes, tree: Any, rng: random.Random, kind: str) -> ByteEffect:
    choice = rng.choice(["truncate", "insert", "trailing", "leading", "bom", "invalid-utf8",
                         "utf16", "reserialize", "reserialize", "reserialize"])
    if choice == "truncate":
        cut = rng.randint(1, max(1, len(data) - 1))
        return ByteEffect(f"truncate({cut}/{len(data)})", data[:cut])
    if choice == "insert":
        piece = rng.choice(INSERTED)
        where = rng.randint(0, len(data))
        return ByteEffect(f"insert({piece!r}@{where})", data[:where] + piece + data[where:])
    if choice == "trailing":
        piece = rng.choice(TRAILING)
        return ByteEffect(f"trailing({piece!r})", data + piece)
    if choice == "leading":
        piece = rng.choice([b" ", b"\t", b"\r\n", b"\x0c", b"\xc2\xa0", b"\x00", b"\xe2\x80\xa8"])
        return ByteEffect(f"leading({piece!r})", piece + data)
    if choice == "bom":
        return ByteEffect("bom", b"\xef\xbb\xbf" + data, bom=True)
    if choice == "invalid-utf8":
        spots = [i for i in range(len(data)) if 0x61 <= data[i] <= 0x7a]
        i = rng.choice(spots) if spots else 0
        piece = rng.choice([b"\xff", b"\xc3", b"\xed\xb0\x80", b"\xc0\x80", b"\xe0\x80\xaf"])
        return ByteEffect(f"invalid-utf8({piece!r})", data[:i] + piece + data[i + 1:])
    if choice == "utf16":
        codec = rng.choice(["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
        return ByteEffect(f"encoding({codec})",
                          data.decode("utf-8", "surrogatepass").encode(codec, "surrogatepass"))
    how = rng.choice(["ascii-escapes", "escaped-slash", "indented", "reordered"])
    if how == "reordered":
        tree = _reordered(tree, rng)
    text = dump(tree, ascii_only=how == "ascii-escapes", slash=how == "escaped-slash",
                indent=2 if how == "indented" or (kind == "envelope" and rng.random() < 0.3)
                else None)
    if kind == "registration":
        text = text.replace("\n", " ")
    return ByteEffect(f"reserialize({how})", encode(text), equivalent=True)


def _reordered(tree: Any, rng: random.Random) -> Any:
    if isinstance(tree, Obj):
        pairs = [[k, _reordered(v, rng)] for k, v in tree.pairs]
        rng.shuffle(pairs)
        return Obj(pairs)
    if isinstance(tree, list):
        return [_reordered(v, rng) for v in tree]
    return tree


# --- the mutator ----------------------------------------------------------------------------


def _related(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def replay(seed: Seed, ops: list[tuple[str, int]]) -> Mutant:  # noqa: C901
    """The mutant that ``ops`` (names and their own random seeds) make of ``seed``."""
    setup = seed.setup if seed.kind == "envelope" else DEFAULT
    doc = Doc(seed.tree, seed.kind, setup)
    effects: list[Effect] = []
    equivalent_tree = True
    byte_ops = []
    for name, op_seed in ops:
        if name.startswith("bytes:"):
            byte_ops.append((name, op_seed))
            continue
        op = JSON_OPS[name][0]
        effect = op(doc, random.Random(op_seed))
        if effect is None:
            continue
        # A later mutation where an earlier one stands voids what the earlier one implied.
        for earlier in effects:
            if _related(earlier.path, effect.path):
                earlier.expect = -1
        effects.append(effect)
        if not getattr(effect, "equivalent", False):
            equivalent_tree = False
    final = dump(doc.tree)
    for e in effects:
        # A definition deleted is malformed only while something still uses the term (a
        # later deletion of its member leaves a document that never needed it).
        if e.op.startswith("delete-definition(") and e.expect == INVALID:
            term = e.op[len("delete-definition("):-1]
            # Still defined by another context object, or mapped by a @vocab (which a
            # profile may allow): then nothing is dropped.
            defined = any(term in c or "@vocab" in c for _, c in doc.contexts())
            used = any(node.has(term) for _, node, _ in doc.nodes()) or f'"{term}:' in final
            if defined or not used:
                e.expect = NONE
    expect, because = NONE, None
    for e in effects:
        if e.expect > expect:
            expect, because = e.expect, e.op
    if expect == INVALID and isinstance(doc.tree, Obj) and _any_remote_context(
            json.loads(final)):
        # a context that cannot be retrieved: what the rest means is not known
        expect = NOT_COMPATIBLE
    text = dump(doc.tree)
    base = encode(text)
    data = base
    equivalent: bytes | None = encode(seed.text) if (equivalent_tree and effects) else None
    labels = []
    for _name, op_seed in byte_ops:
        before_tree, before_why = strict_parse(data)
        byte_effect = byte_op(data, doc.tree, random.Random(op_seed), seed.kind)
        before, data = data, byte_effect.data
        labels.append(byte_effect.op)
        parsed, why = strict_parse(data, allow_bom=byte_effect.bom)
        if why is not None:
            expect, because, equivalent = INVALID, f"{byte_effect.op}: {why}", None
        elif before_why is not None or norm(parsed) != norm(before_tree):
            expect, because, equivalent = NONE, None, None  # another document
        elif byte_effect.bom:
            equivalent = None  # RFC 8259 lets a parser ignore a BOM or reject it
        else:
            equivalent = equivalent or before  # the same JSON value
    mutant = Mutant(seed, list(ops), data, seed.kind, setup, effects, expect, because,
                    equivalent, doc.tree)
    mutant.effects += [Effect(label, NONE, ()) for label in labels]
    return mutant


def mutate(seed: Seed, rng: random.Random, *, max_ops: int = 3, byte_rate: float = 0.3) -> Mutant:
    names = list(JSON_OPS)
    weights = [JSON_OPS[n][1] for n in names]
    if seed.kind == "envelope":
        weights = [0.0 if n == "media-type" else w for n, w in zip(names, weights, strict=True)]
    ops: list[tuple[str, int]] = []
    count = rng.choice([1, 1, 1, 2, 2, 3][: 2 * max_ops])
    for _ in range(count):
        ops.append((rng.choices(names, weights)[0], rng.getrandbits(32)))
    if rng.random() < byte_rate:
        if rng.random() < 0.4:
            ops = ops[:0] if rng.random() < 0.5 else ops[:1]
        ops.append(("bytes:" + rng.choice(["a", "b"]), rng.getrandbits(32)))
    return replay(seed, ops)


def mutants(count: int, seed: int, kind: str | None = None) -> Iterator[Mutant]:
    rng = random.Random(seed)
    pool = usable_seeds(kind)
    envelopes = [s for s in pool if s.kind == "envelope"]
    registrations = [s for s in pool if s.kind == "registration"]
    for _ in range(count):
        if kind == "envelope" or (kind is None and rng.random() < 0.75):
            # the draft's examples more often than the rest
            source = envelopes[0] if rng.random() < 0.25 else rng.choice(envelopes)
        else:
            source = registrations[0] if rng.random() < 0.3 else rng.choice(registrations)
        yield mutate(source, rng)


# --- running one input ------------------------------------------------------------------------


@dataclass
class Failure:
    signature: tuple[str, ...]
    detail: dict[str, Any]

    @property
    def cls(self) -> str:
        return self.signature[0]


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    inside = [f for f in frames if "ioa_semantic" in f.filename] or frames
    last = inside[-1]
    return f"{Path(last.filename).name}:{last.lineno} ({last.name})"


def _exception(engine: str, exc: BaseException, kind: str) -> Failure:
    return Failure(("exception", kind, engine, type(exc).__name__, _where(exc)),
                   {"engine": engine, "exception": f"{type(exc).__name__}: {str(exc)[:300]}",
                    "where": _where(exc),
                    "traceback": "".join(traceback.format_exception(exc))[-2500:]})


@lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


@lru_cache(maxsize=1)
def _reason_validator() -> Any:
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    reason = dict(schema["$defs"]["reason"])
    return jsonschema.Draft202012Validator(reason)


def rendered(decision: Any) -> str:
    """The decision as the json reporter writes it (one line)."""
    from ioa_semantic.reporters.check import json_lines

    out = io.StringIO()
    json_lines([decision], out)
    return out.getvalue()


def _summary(decision: Any) -> dict[str, Any]:
    return {"verdict": decision.verdict.value,
            "codes": sorted({f.code for f in decision.findings}),
            "errors": sorted({f.code for f in decision.findings
                              if f.severity.value == "error"})}


def _check(checker: Any, data: bytes, setup: Setup) -> Any:
    # A Checker remembers the first content of each envelope instance (@id, profileVersion;
    # draft 5.3, by design: tests/test_checker.py holds it). Mutants reuse their seed's @id
    # with other contents, so each is judged as the first of its instance; everything else a
    # warm Checker holds must still give the fresh answer.
    checker._instances.clear()
    return checker.check(data, at=setup.at, params=dict(setup.params), source="fuzz")


def _output_failures(kind: str, engine: str, line: str) -> list[Failure]:
    failures = []
    if line.count("\n") != 1 or not line.endswith("\n"):
        failures.append(Failure(("output", kind, engine, "not one line"), {"line": line[:500]}))
    try:
        line.encode("utf-8")
    except UnicodeEncodeError as exc:
        failures.append(Failure(("output", kind, engine, "not encodable as UTF-8"),
                                {"error": str(exc)[:200], "line": ascii(line)[:500]}))
    try:
        result = json.loads(line)
    except ValueError as exc:
        failures.append(Failure(("output", kind, engine, "not JSON"), {"error": str(exc)}))
        return failures
    for error in sorted(_validator().iter_errors(result), key=str)[:3]:
        where = "/".join(str(p) for p in error.absolute_path)
        failures.append(Failure(("schema", kind, engine, error.validator,
                                 re.sub(r"/\d+", "/N", where)),
                                {"error": error.message[:300], "at": where}))
    verdict = result.get("verdict")
    reasons = result.get("reasons") or []
    if verdict == "compatible" and any(r.get("severity") == "error" for r in reasons):
        failures.append(Failure(("output", kind, engine, "compatible with an error reason"),
                                {"reasons": reasons}))
    # Remedies (contract 2): none on a compatible result; each answers deciding reasons only;
    # every invalid reason is answered by a correct-input at its path. A non-compatible result
    # may have none, when no deciding code has one (docs/codes.md says which and why).
    remedies = result.get("remedies")
    deciding = {r.get("code") for r in reasons if r.get("severity") == "error"}
    if verdict == "compatible" and remedies:
        failures.append(Failure(("output", kind, engine, "compatible with remedies"),
                                {"remedies": remedies}))
    for remedy in remedies or ():
        if not set(remedy.get("codes") or ()) <= deciding or not remedy.get("codes"):
            failures.append(Failure(("output", kind, engine, "remedy of no deciding reason",
                                     str(remedy.get("action"))), {"remedy": remedy}))
    if verdict == "invalid" and remedies is not None:
        answered = {r.get("path") for r in remedies if r.get("action") == "correct-input"}
        for reason in reasons:
            if reason.get("severity") == "error" and reason.get("path") not in answered:
                failures.append(Failure(("output", kind, engine, "invalid reason without "
                                         "correct-input"), {"reason": reason}))
    return failures


def run_envelope(m: Mutant, *, fresh: bool = True, engines: Engines = ENGINES) -> tuple[  # noqa: C901
        list[Failure], dict[str, Any]]:
    """Every property for one envelope; the failures and what each engine said."""
    pair = engines.pair(m.setup)
    assert pair is not None, m.setup
    failures: list[Failure] = []
    seen: dict[str, Any] = {}
    lines: dict[str, str] = {}
    for engine, checker in zip(("compiled", "reference"), pair, strict=True):
        try:
            decision = _check(checker, m.data, m.setup)
        except Exception as exc:
            failures.append(_exception(engine, exc, "envelope"))
            continue
        seen[engine] = _summary(decision)
        try:
            lines[engine] = rendered(decision)
        except Exception as exc:
            failures.append(_exception(f"{engine} (json reporter)", exc, "envelope"))
            continue
        failures += _output_failures("envelope", engine, lines[engine])
        # the same input twice: the same output
        try:
            again = rendered(_check(checker, m.data, m.setup))
        except Exception as exc:
            failures.append(_exception(f"{engine} (second run)", exc, "envelope"))
        else:
            if again != lines[engine]:
                failures.append(Failure(("nondeterministic", "envelope", engine, "second run"),
                                        {"first": lines[engine][:1500], "second": again[:1500]}))
    if fresh and "compiled" in lines:
        # a new checker reads its first document with another parser than the next ones
        try:
            first = rendered(_check(engines.fresh(m.setup), m.data, m.setup))
        except Exception as exc:
            failures.append(_exception("compiled (fresh checker)", exc, "envelope"))
        else:
            if first != lines["compiled"]:
                failures.append(Failure(
                    ("nondeterministic", "envelope", "compiled", "fresh checker vs warm checker"),
                    {"fresh": first[:1500], "warm": lines["compiled"][:1500]}))
    if len(seen) == 2 and (seen["compiled"]["verdict"], seen["compiled"]["codes"]) != (
            seen["reference"]["verdict"], seen["reference"]["codes"]):
        c, r = seen["compiled"], seen["reference"]
        failures.append(Failure(("divergence", "envelope", *_diff(c, r, "verdict")),
                                {"compiled": c, "reference": r}))
    for engine, said in seen.items():
        verdict = said["verdict"]
        if m.expect == INVALID and verdict != "invalid":
            failures.append(Failure(("malformed-not-invalid", "envelope", verdict, engine,
                                     _op_family(m.expect_op)),
                                    {"engine": engine, "observed": said,
                                     "expected": "invalid", "because": m.expect_op}))
        elif m.expect == NOT_COMPATIBLE and verdict == "compatible":
            failures.append(Failure(("judged-compatible", "envelope", engine,
                                     _op_family(m.expect_op)),
                                    {"engine": engine, "observed": said,
                                     "expected": "not compatible", "because": m.expect_op}))
    if m.equivalent is not None and seen:
        for engine, checker in zip(("compiled", "reference"), pair, strict=True):
            if engine not in seen:
                continue
            try:
                base = _summary(_check(checker, m.equivalent, m.setup))
            except Exception as exc:
                failures.append(_exception(engine, exc, "envelope"))
                continue
            said = seen[engine]
            if (base["verdict"], base["codes"]) != (said["verdict"], said["codes"]):
                failures.append(Failure(
                    ("equivalent-input-differs", "envelope", engine,
                     _op_class(" ".join(e.op for e in m.effects))),
                    {"engine": engine, "this": said, "same-json-value": base,
                     "other_input": m.equivalent.decode("utf-8", "backslashreplace")}))
    return failures, seen


_EARLY = ("json.", "jsonld.", "envelope.", "registration.")


def _diff(c: dict[str, Any], r: dict[str, Any], field: str) -> tuple[str, str]:
    """What the engines disagree on, as a failure class: the codes of the reading stages
    (json, jsonld, envelope, registration) that only one engine reports, where there are
    some (the later codes follow from them), else every code only one reports."""
    only_c = set(c["codes"]) - set(r["codes"])
    only_r = set(r["codes"]) - set(c["codes"])
    early_c = {x for x in only_c if x.startswith(_EARLY)}
    early_r = {x for x in only_r if x.startswith(_EARLY)}
    if early_c or early_r:
        only_c, only_r = early_c, early_r
    side = "invalid" if c[field] == "invalid" else "not invalid"
    other = "invalid" if r[field] == "invalid" else "not invalid"
    return (f"compiled {side} +[{','.join(sorted(only_c))}]",
            f"reference {other} +[{','.join(sorted(only_r))}]")


def _op_family(op: str | None) -> str:
    """A mutation's family: its name, and for a key or a definition, what it touched."""
    if not op:
        return ""
    name, _, rest = op.partition("(")
    if name in ("delete", "type-swap", "array", "legacy-key", "bare-node-reference",
                "blank-string", "context-definition", "keyword-like-key", "colon-key"):
        return f"{name}({rest.split(',')[0].rstrip(')').split('->')[0]})"
    if ":" in name and "(" in name:
        return name
    return re.sub(r"\(.*", "", _op_class(op).split(":")[0])


def _op_class(op: str | None) -> str:
    """A mutation's name without what varies between instances (positions, cut points)."""
    if not op:
        return ""
    op = re.sub(r"(insert\(.*)@\d+\)", r"\1)", op)
    op = re.sub(r"truncate\(\d+/\d+\)", "truncate", op)
    return re.sub(r": not JSON: .*", ": not JSON", op)


# --- registrations ----------------------------------------------------------------------------


def _judged(checker: Any, data: bytes, kinds: Any = None) -> dict[str, Any]:
    from ioa_semantic.audit.judge import judge

    result, _ = judge(checker, data, "fuzz", 0, kinds)
    return {"id": result.id, "status": result.status,
            "codes": sorted({r.code for r in result.reasons}),
            "reasons": [r.as_dict() for r in result.reasons]}


# What a kind's masked members are changed to in a sibling: appended to (an @id stays an
# IRI of its scheme, mostly), or replaced by text a finding could quote or trip on.
_SIBLING_EDITS: tuple[Callable[[str], str], ...] = (
    lambda text: text + "x", lambda text: text + ":y", lambda text: "",
    lambda text: text + " space", lambda text: "Capability", lambda text: text + "\n\u00e9")


def _siblings(data: bytes, kinds: Any) -> list[bytes]:
    """Registrations of ``data``'s kind (as ``kinds`` planned it), its masked members (the
    ``@id`` and the strings any string meets) changed one at a time and all together."""
    try:
        document = json.loads(data)
    except ValueError:
        return []
    if not isinstance(document, dict) or kinds is None:
        return []
    masked = next((plan.masked for layout, plan in kinds.plans.items()
                   if plan is not None and layout[0] == tuple(document)), None)
    if masked is None or not all(isinstance(document.get(k), str) for k in masked):
        return []
    out = []
    for edit in _SIBLING_EDITS:
        for keys in ([[k] for k in masked] + [list(masked)]):
            changed = dict(document)
            for key in keys:
                changed[key] = edit(changed[key])
            out.append(json.dumps(changed, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return out


def run_registration(m: Mutant, engines: Engines = ENGINES) -> tuple[list[Failure], dict[str, Any]]:  # noqa: C901
    from ioa_semantic.audit.workers import kinds_for
    from ioa_semantic.reporters.audit import result_line

    pair = engines.pair(DEFAULT)
    assert pair is not None
    failures: list[Failure] = []
    seen: dict[str, Any] = {}
    for engine, checker in zip(("compiled", "reference"), pair, strict=True):
        try:
            seen[engine] = _judged(checker, m.data)
        except Exception as exc:
            failures.append(_exception(engine, exc, "registration"))
    compiled = pair[0]
    try:
        kinds = kinds_for(compiled)
        first = _judged(compiled, m.data, kinds)
        second = _judged(compiled, m.data, kinds)  # answered from what the first taught
        if "compiled" in seen and first != seen["compiled"]:
            failures.append(Failure(("nondeterministic", "registration", "compiled",
                                     "judged with kinds vs without"),
                                    {"without": seen["compiled"], "with": first}))
        if second != first:
            failures.append(Failure(("nondeterministic", "registration", "compiled",
                                     "kind judged twice"), {"first": first, "second": second}))
        for sibling in _siblings(m.data, kinds):
            # Another registration of the kind (its masked members changed): answered from
            # what the first taught (clean or reported), it is judged as in full.
            alone, taught = _judged(compiled, sibling), _judged(compiled, sibling, kinds)
            if taught != alone:
                failures.append(Failure(("divergence", "registration", "compiled",
                                         "a sibling of a kind judged by kind vs in full"),
                                        {"sibling": sibling.decode("utf-8", "replace")[:300],
                                         "in full": alone, "by kind": taught}))
    except Exception as exc:
        failures.append(_exception("compiled (audit kinds)", exc, "registration"))
    if len(seen) == 2:
        c, r = seen["compiled"], seen["reference"]
        if (c["status"], c["codes"], c["id"]) != (r["status"], r["codes"], r["id"]):
            failures.append(Failure(("divergence", "registration", *_diff(c, r, "status")),
                                    {"compiled": c, "reference": r}))
    for engine, said in seen.items():
        if m.expect == INVALID and said["status"] != "invalid":
            failures.append(Failure(("malformed-not-invalid", "registration", said["status"],
                                     engine, _op_family(m.expect_op)),
                                    {"engine": engine, "observed": said, "expected": "invalid",
                                     "because": m.expect_op}))
        elif m.expect == NOT_COMPATIBLE and said["status"] == "valid":
            failures.append(Failure(("judged-compatible", "registration", engine,
                                     _op_family(m.expect_op)),
                                    {"engine": engine, "observed": said, "because": m.expect_op}))
        for reason in said["reasons"]:
            for error in _reason_validator().iter_errors(reason):
                failures.append(Failure(("schema", "registration", engine, error.validator,
                                         "reason"), {"reason": reason, "error": error.message}))
        if said["status"] != "valid" and not any(r["severity"] == "error"
                                                 for r in said["reasons"]):
            failures.append(Failure(("output", "registration", engine,
                                     f"{said['status']} without an error reason"),
                                    {"observed": said}))
    try:
        from ioa_semantic.audit.judge import Result

        line = result_line(Result("fuzz", 0, seen.get("compiled", {}).get("id"),
                                  seen.get("compiled", {}).get("status", "valid"), ()))
        line.encode("utf-8")
    except UnicodeEncodeError as exc:
        failures.append(Failure(("output", "registration", "compiled",
                                 "audit line not encodable as UTF-8"), {"error": str(exc)[:200]}))
    except Exception as exc:
        failures.append(_exception("compiled (audit line)", exc, "registration"))
    return failures, seen


def audit_command(lines: list[bytes], engine: str = "compiled", jobs: int = 1) -> tuple[
        int, list[dict[str, Any]], str]:
    """The audit command (in this process) on one JSON Lines file of ``lines``:
    (exit status, the output's objects, stderr)."""
    from ioa_semantic.cli import main as _cli

    with tempfile.TemporaryDirectory(prefix="ioa-fuzz-") as tmp:
        path = os.path.join(tmp, "registrations.jsonl")
        out = os.path.join(tmp, "out.jsonl")
        with open(path, "wb") as handle:
            handle.write(b"\n".join(lines) + b"\n")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            status = _cli.main(["audit", path, "--profile", "cs-translation", "--format", "json",
                                "--jobs", str(jobs), "--engine", engine, "--output", out])
        with open(out, encoding="utf-8") as handle:
            objects = [json.loads(line) for line in handle if line.strip()]
    return int(status), objects, err.getvalue()


def _per_line(objects: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    out = {}
    for obj in objects:
        if "index" in obj and "status" in obj:
            out[obj["index"]] = {"id": obj["id"], "status": obj["status"],
                                 "reasons": sorted((r["code"], r["severity"], r["path"],
                                                    r["message"]) for r in obj["reasons"])}
    return out


def run_audit_order(batch: list[Mutant], rng: random.Random,
                    engine: str = "compiled") -> list[Failure]:
    """A batch of registrations audited in two line orders: each line's result is the same."""
    lines = [m.data for m in batch if b"\n" not in m.data and m.data.strip()]
    if len(lines) < 2:
        return []
    order = list(range(len(lines)))
    rng.shuffle(order)
    failures: list[Failure] = []
    try:
        _, first, _ = audit_command(lines, engine)
        _, second, _ = audit_command([lines[i] for i in order], engine)
    except Exception as exc:
        return [_exception(f"{engine} (audit command)", exc, "registration")]
    a, b = _per_line(first), _per_line(second)
    if len(a) != len(lines) or len(b) != len(lines):
        failures.append(Failure(("audit", "registration", engine, "not one result per line"),
                                {"lines": len(lines), "results": [len(a), len(b)]}))
    for new_position, old_position in enumerate(order):
        if a.get(old_position) != b.get(new_position):
            failures.append(Failure(
                ("audit-order-dependent", "registration", engine),
                {"line": lines[old_position].decode("utf-8", "backslashreplace"),
                 "in_order": a.get(old_position), "shuffled": b.get(new_position),
                 "batch": [x.decode("utf-8", "backslashreplace") for x in lines]}))
            break
    summary_a = [o for o in first if "summary" in o]
    summary_b = [o for o in second if "summary" in o]
    if summary_a and summary_b and summary_a[0]["summary"]["status"] != \
            summary_b[0]["summary"]["status"]:
        failures.append(Failure(("audit-order-dependent", "registration", engine, "summary"),
                                {"in_order": summary_a, "shuffled": summary_b}))
    return failures


def run(m: Mutant, **options: Any) -> list[Failure]:
    if m.kind == "envelope":
        return run_envelope(m, **options)[0]
    return run_registration(m)[0]


# --- minimizing -------------------------------------------------------------------------------


def _reproduces(m: Mutant, signature: tuple[str, ...]) -> bool:
    try:
        return any(f.signature == signature for f in run(m, fresh="fresh" in " ".join(signature)))
    except Exception:
        return False


def minimize(m: Mutant, signature: tuple[str, ...], budget: int = 120) -> Mutant:
    """A smaller mutant with the same failure signature: fewer mutations, a smaller seed,
    members removed (where no expectation is at stake)."""
    tries = 0
    best = m
    # 1. fewer mutations
    changed = True
    while changed and len(best.ops) > 1 and tries < budget:
        changed = False
        for i in range(len(best.ops)):
            tries += 1
            candidate = replay(best.seed, best.ops[:i] + best.ops[i + 1:])
            if _reproduces(candidate, signature):
                best, changed = candidate, True
                break
    # 2. a smaller seed of the same kind and setup
    smaller = sorted((s for s in usable_seeds(best.kind)
                      if len(s.text) < len(best.seed.text) and
                      (best.kind == "registration" or s.setup == best.setup)),
                     key=lambda s: len(s.text))
    for seed in smaller[:12]:
        if tries >= budget:
            break
        tries += 1
        try:
            candidate = replay(seed, best.ops)
        except Exception:
            continue
        if _reproduces(candidate, signature):
            best = candidate
            break
    # 3. members removed (never where a mutation stands, whose expectation is at stake)
    if any(n.startswith("bytes:") for n, _ in best.ops) or best.tree is None:
        return best
    protected = [e.path for e in best.effects if e.expect >= 0 and e.path]
    tree = best.tree
    changed = True
    while changed and tries < budget:
        changed = False
        for path in list(_member_paths(tree)):
            if tries >= budget:
                break
            keys = _key_path(tree, path)
            if keys is None or any(_related(keys, p) for p in protected):
                continue
            smaller_tree = copy.deepcopy(tree)
            if not _remove(smaller_tree, path):
                continue
            tries += 1
            candidate = Mutant(best.seed, best.ops, encode(dump(smaller_tree)), best.kind,
                               best.setup, best.effects, best.expect, best.expect_op, None,
                               smaller_tree)
            if _reproduces(candidate, signature):
                best, tree, changed = candidate, smaller_tree, True
                break
    return best


def _key_path(tree: Any, path: tuple[int, ...]) -> tuple[Any, ...] | None:
    """An index path (member positions) as the key path the mutations record."""
    out: list[Any] = []
    node = tree
    for step in path:
        if isinstance(node, Obj):
            key, node = node.pairs[step]
            out.append(key)
        elif isinstance(node, list):
            out.append(step)
            node = node[step]
        else:
            return None
    return tuple(out)


def _member_paths(tree: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(tree, Obj):
        for i in range(len(tree.pairs)):
            yield (*path, i)
        for i, (_, v) in enumerate(tree.pairs):
            yield from _member_paths(v, (*path, i))
    elif isinstance(tree, list):
        for i in range(len(tree)):
            yield (*path, i)
        for i, v in enumerate(tree):
            yield from _member_paths(v, (*path, i))


def _remove(tree: Any, path: tuple[int, ...]) -> bool:
    node = tree
    for step in path[:-1]:
        node = node.pairs[step][1] if isinstance(node, Obj) else node[step]
    last = path[-1]
    if isinstance(node, Obj):
        del node.pairs[last]
    elif isinstance(node, list):
        del node[last]
    else:
        return False
    return True


# --- the corpus of counter-examples (tests/cases/fuzz) ---------------------------------------


def corpus_cases() -> list[Path]:
    return sorted(p.parent for p in FUZZ_CASES.glob("*/case.json"))


def audit_corpus() -> list[Path]:
    return sorted(p.parent for p in (FUZZ_CASES / "_audit").glob("*/audit.json"))


def case_mutant(folder: Path) -> tuple[Mutant, dict[str, Any]]:
    """A corpus case as a mutant (its expectation the case's verdict)."""
    spec = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    setup = setup_from_args(f"fuzz/{folder.name}", folder, spec["args"]) or DEFAULT
    if setup.shipped_profile and not (setup.capabilities or setup.alignments or setup.params):
        setup = DEFAULT if setup.at == AT else setup
    data = (folder / spec["envelope"]).read_bytes()
    expect = {"invalid": INVALID}.get(spec["expect"]["verdict"], NONE)
    if spec["expect"]["verdict"] in ("indeterminate", "incompatible"):
        expect = NOT_COMPATIBLE
    seed = Seed(f"fuzz/{folder.name}", "envelope", "{}", setup)
    return Mutant(seed, [], data, "envelope", setup, [], expect, spec["expect"]["verdict"],
                  None), spec
