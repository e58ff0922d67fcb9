"""Loading what a check is judged against: domain profiles, alignment artifacts, registrations.

Profiles are Turtle (the format is documented in the README); artifacts are the 12.4 JSON
shape, validated on load and read into RDF through the project's artifact context; a
receiver's own capability registrations go through the same intake, expansion and shape
stages as envelopes. A profile or registration that cannot be read is a configuration
error; a malformed artifact is excluded with a reason, never fatal (contract rule 9).
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import json
import os
from collections.abc import Iterator, Mapping
from datetime import datetime
from functools import cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

import pyoxigraph

if TYPE_CHECKING:
    from .retrieval import Retriever

from .. import data as _resources
from .._exceptions import ArtifactError, ProfileError, RetrievalError
from .._files import CONFIGURATION_BYTES, Unreadable, read_bounded
from .._instants import Instant, instant
from .._iri import bidi_defect, is_absolute_iri, shown_iri
from .._nearest import did_you_mean
from .._runtime import sha256
from .._vocab import IOA, IOP, RDF_TYPE, RDFS_LABEL, XSD
from ..pipeline.intake import number_text, parse
from ..pipeline.provenance import Proof, is_did_key, method_of, public_key_of, read_proof
from . import vocabulary
from .parameters import (
    BUILT_IN,
    COMPARISONS,
    DATATYPES,
    Parameter,
    Value,
    datatype_problem,
    describe,
    key,
    unit_problem,
    value_of,
)

PROFILE_GRAPH = pyoxigraph.NamedNode("urn:ioa-semantic:graph:profile")
DEFAULT_SCHEMES = frozenset({"https", "http", "urn"})
# The task parameters of the contract's table; a profile may declare more.
TASK_PARAMETERS = tuple(BUILT_IN)


class VersionRelationship(NamedTuple):
    """A profile's declaration that one ontology version is read as an accepted one (5.3)."""

    ontology_id: str
    version: str
    read_as: str
    intents: frozenset[str]


class IssuerBinding(NamedTuple):
    """A profile's binding of a trusted issuer to the ``did:key`` verification methods whose
    proofs it accepts for that issuer's artifacts (contract 6), and whether one is required."""

    issuer: str
    methods: frozenset[str]
    require_proof: bool = True


class RetrievalSettings(NamedTuple):
    """A profile's retrieval policy section (draft 6.1): what may be fetched, within what."""

    origins: tuple[str, ...] = ()
    allow_private_addresses: bool = False
    budgets: Mapping[str, Any] = MappingProxyType({})
    pins: Mapping[str, str] = MappingProxyType({})


# iop: predicate of the retrieval section -> RetrievalPolicy field, and whether it is whole.
RETRIEVAL_BUDGETS = {
    "connectTimeout": ("connect_timeout", False),
    "totalTimeout": ("total_timeout", False),
    "checkTimeout": ("check_timeout", False),
    "maxBytes": ("max_bytes", True),
    "maxRedirects": ("max_redirects", True),
    "maxDepth": ("max_depth", True),
    "maxFetches": ("max_fetches", True),
}


class Profile(NamedTuple):
    """A receiver's accepted domain profile."""

    id: str
    revision: str
    source: str
    label: str = ""
    accepted: frozenset[tuple[str, str]] = frozenset()
    relationships: tuple[VersionRelationship, ...] = ()
    permitted_domains: frozenset[str] = frozenset()
    permitted_binding_domains: frozenset[str] = frozenset()
    cross_domain_bindings: bool = False
    allowed_schemes: frozenset[str] = DEFAULT_SCHEMES
    ignorable_terms: frozenset[str] = frozenset()
    permitted_types: frozenset[str] = frozenset()
    allow_vocab: bool = False
    allow_base: bool = False
    trusted_issuers: frozenset[str] = frozenset()
    issuer_bindings: Mapping[str, IssuerBinding] = MappingProxyType({})
    pins: Mapping[tuple[str, str], str] = MappingProxyType({})
    preferred_issuers: Mapping[str, int] = MappingProxyType({})
    required_parameters: frozenset[str] = frozenset()
    parameter_values: Mapping[str, frozenset[str]] = MappingProxyType({})
    # Every task parameter it speaks of, by name: the built-in five and its own
    # (iop:taskParameter; a name only required or constrained is a string compared equal).
    parameters: Mapping[str, Parameter] = MappingProxyType(BUILT_IN)
    retrieval: RetrievalSettings = RetrievalSettings()
    quads: tuple[pyoxigraph.Quad, ...] = ()
    digest: str = ""
    # The profile's own SHACL shape files (iop:shapes), as written: a path beside the
    # profile (or absolute), or a pinned URL; read by :func:`load_shape_files`.
    shapes: tuple[str, ...] = ()

    @property
    def known_parameters(self) -> frozenset[str]:
        """The parameters with a defined evaluation: a condition on any other cannot be
        evaluated (rule 10)."""
        return frozenset(self.parameters)

    def parameter(self, name: str) -> Parameter:
        """The declaration of a parameter (an undeclared one is a string compared equal: no
        condition on it is evaluated, see :attr:`known_parameters`)."""
        return self.parameters.get(name) or Parameter(name, "string")

    def parameter_terms(self) -> dict[str, Parameter]:
        """The declared parameters by the property that carries them."""
        return {p.term: p for p in self.parameters.values() if p.term is not None}

    def single_ontology(self) -> tuple[str, str] | None:
        return next(iter(self.accepted)) if len(self.accepted) == 1 else None

    def accepted_methods(self, issuer: str) -> frozenset[str] | None:
        """The verification methods whose proofs the profile accepts for ``issuer``'s
        artifacts: a ``did:key`` issuer's own key, a bound issuer's keys; None for an issuer
        trusted by claim (no key is the issuer's, so none is required or refused)."""
        if is_did_key(issuer):
            return frozenset({method_of(issuer)})
        binding = self.issuer_bindings.get(issuer)
        return binding.methods if binding is not None else None

    def requires_proof(self, issuer: str) -> bool:
        """Whether an artifact of ``issuer`` is accepted only with a proof that verifies."""
        binding = self.issuer_bindings.get(issuer)
        return is_did_key(issuer) or (binding is not None and binding.require_proof)


class _Graph:
    """Triples of a profile file by subject, for reading its settings."""

    def __init__(self, quads: list[pyoxigraph.Quad]) -> None:
        self.by_subject: dict[Any, dict[str, list[Any]]] = {}
        for quad in quads:
            self.by_subject.setdefault(quad.subject, {}).setdefault(
                quad.predicate.value, []).append(quad.object)

    def objects(self, subject: Any, predicate: str) -> list[Any]:
        return self.by_subject.get(subject, {}).get(predicate, [])

    def values(self, subject: Any, predicate: str) -> frozenset[str]:
        return frozenset(o.value for o in self.objects(subject, predicate))

    def one(self, subject: Any, predicate: str, what: str, source: str) -> str:
        found = self.objects(subject, predicate)
        if len(found) != 1:
            raise ProfileError(f"{source}: {what} must have exactly one {_local(predicate)} "
                               f"(found {len(found)})")
        return str(found[0].value)

    def version(self, subject: Any, predicate: str, what: str, source: str) -> str:
        """:meth:`one` of a version or revision: a non-empty string (draft 5.2: "one
        non-empty version string"; a blank one would match no envelope's, and say nothing)."""
        value = self.one(subject, predicate, what, source)
        if not value.strip():
            raise ProfileError(f"{source}: {what}'s iop:{_local(predicate)} is blank: a version "
                               "is a non-empty string")
        return value


def _local(iri: str) -> str:
    return iri.rpartition("#")[2]


class ProfileUnavailable(ProfileError):
    """A remote profile could not be retrieved; every check under it is indeterminate."""

    def __init__(self, url: str, code: str, message: str,
                 profile: tuple[str, str] | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.code = code
        # The profile's id and revision when it was read and a file it names was not (a
        # shape file): decisions name the profile, not the file.
        self.profile = profile


TURTLE_TYPES = frozenset({"text/turtle", "application/x-turtle"})


def is_remote(reference: str) -> bool:
    return reference.lower().startswith(("https://", "http://"))


def resolve_profile(name_or_path: str, retriever: "Retriever | None" = None) -> tuple[str, bytes]:
    """The source name and bytes of a shipped profile name, a file path, or a URL."""
    if is_remote(name_or_path):
        if retriever is None:
            raise ProfileUnavailable(name_or_path, "retrieval.prohibited",
                                     f"the profile {name_or_path} is not retrieved: remote "
                                     "retrieval is off (allow its origin with --allow-remote)")
        try:
            body, final_url, _ = retriever.fetch_bytes(name_or_path, TURTLE_TYPES)
        except RetrievalError as exc:
            raise ProfileUnavailable(name_or_path, exc.code, exc.message) from exc
        return final_url, body
    shipped = _resources.shipped_profiles()
    if name_or_path in shipped:
        return f"profile {name_or_path!r}", _resources.read_bytes("profiles", shipped[name_or_path])
    if os.path.splitext(name_or_path)[1] and os.path.exists(name_or_path):
        return name_or_path, _read_file(name_or_path, ProfileError)
    installed = ", ".join(shipped) or "none"
    raise ProfileError(
        f"unknown profile {name_or_path!r}: not an installed profile (installed: {installed}) "
        f"and not a readable profile file{_mistyped(name_or_path, shipped)}")


def _mistyped(given: str, shipped: Mapping[str, str]) -> str:
    """The shipped name that ``given`` resembles, as words to append to its refusal; none for
    a path (a folder in it): a missing file is not a misspelt name."""
    if os.sep in given or "/" in given:
        return ""
    return did_you_mean(given, shipped)


def _read_file(path: str, error: type[Exception]) -> bytes:
    """A profile's or an artifact's file, read up to :data:`CONFIGURATION_BYTES`; a file
    that is not read (unreadable, over the limit, not a regular file) is ``error``."""
    try:
        return read_bounded(path, CONFIGURATION_BYTES, "for a configuration file")
    except Unreadable as exc:
        raise error(f"{path}: {exc}") from None


def load_profile(name_or_path: str, retriever: "Retriever | None" = None) -> Profile:
    source, data = resolve_profile(name_or_path, retriever)
    return read_profile(data, source)


def read_profile(data: bytes, source: str) -> Profile:  # noqa: C901
    """Read a Turtle profile strictly; every structural problem is a :class:`ProfileError`
    (one naming every problem of the profile's vocabulary, each with its line)."""
    try:
        quads = list(pyoxigraph.parse(data, pyoxigraph.RdfFormat.TURTLE,
                                      without_named_graphs=True))
    except (SyntaxError, ValueError) as exc:
        raise ProfileError(f"{source}: not valid Turtle: {exc}") from exc
    for quad in quads:
        # Turtle's grammar allows them; RFC 3987 (4.1) does not: such an IRI reads otherwise
        # than it compares, in every report that names it.
        for term in (quad.subject, quad.predicate, quad.object):
            if isinstance(term, pyoxigraph.NamedNode) and (bidi := bidi_defect(term.value)):
                raise ProfileError(f"{source}: the IRI <{shown_iri(term.value)}> has "
                                   f"{bidi.describe()}")
    graph = _Graph(quads)
    profiles = [s for s, props in graph.by_subject.items()
                if any(o.value == IOP + "Profile" for o in props.get(RDF_TYPE, []))]
    if len(profiles) != 1:
        raise ProfileError(f"{source}: must describe exactly one iop:Profile (found {len(profiles)})")
    node = profiles[0]
    if not isinstance(node, pyoxigraph.NamedNode):
        raise ProfileError(f"{source}: the iop:Profile must be named by an IRI")
    strict = vocabulary.problems(quads, data.decode("utf-8", "replace"), node)
    if strict:
        raise ProfileError(f"{source}: " + "; ".join(strict), tuple(strict))
    revision = graph.version(node, IOP + "revision", "the profile", source)
    accepted = set()
    for entry in graph.objects(node, IOP + "acceptsOntology"):
        accepted.add((graph.one(entry, IOP + "ontologyId", "acceptsOntology", source),
                      graph.version(entry, IOP + "ontologyVersion", "acceptsOntology", source)))
    if not accepted:
        raise ProfileError(f"{source}: the profile accepts no ontology (iop:acceptsOntology)")
    relationships = []
    for entry in graph.objects(node, IOP + "versionRelationship"):
        rel = VersionRelationship(
            graph.one(entry, IOP + "ontologyId", "versionRelationship", source),
            graph.version(entry, IOP + "version", "versionRelationship", source),
            graph.one(entry, IOP + "readAs", "versionRelationship", source),
            graph.values(entry, IOP + "appliesToIntent"),
        )
        if (rel.ontology_id, rel.read_as) not in accepted:
            raise ProfileError(f"{source}: versionRelationship reads {rel.version!r} as "
                               f"{rel.read_as!r}, which the profile does not accept")
        relationships.append(rel)
    pins = {}
    for entry in graph.objects(node, IOP + "artifactPin"):
        digest = graph.one(entry, IOP + "sha256", "artifactPin", source).lower()
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ProfileError(f"{source}: artifactPin sha256 {digest!r} is not 64 hex digits")
        pins[(graph.one(entry, IOP + "artifact", "artifactPin", source),
              graph.one(entry, IOP + "revision", "artifactPin", source))] = digest
    preferred = {}
    for entry in graph.objects(node, IOP + "preferIssuer"):
        rank = graph.one(entry, IOP + "rank", "preferIssuer", source)
        if not rank.isdigit():
            raise ProfileError(f"{source}: preferIssuer rank {rank!r} is not a whole number")
        preferred[graph.one(entry, IOP + "issuer", "preferIssuer", source)] = int(rank)
    parameters, required, parameter_values = _task_parameters(graph, node, source)
    trusted = graph.values(node, IOP + "trustedIssuer")
    for issuer in sorted(filter(is_did_key, trusted)):
        # A did:key issuer is trusted by its key: one that is no key (a small-order point,
        # a non-canonical encoding) would "verify" proofs nobody made.
        try:
            public_key_of(issuer)
        except ValueError as exc:
            raise ProfileError(f"{source}: trustedIssuer {issuer}: {exc}") from None
    bindings = _issuer_bindings(graph, node, trusted, source)
    schemes = graph.values(node, IOP + "allowedScheme")
    flags = {}
    for flag in ("crossDomainBindings", "allowVocab", "allowBase"):
        values = graph.values(node, IOP + flag)
        if values - {"true", "false"} or len(values) > 1:
            raise ProfileError(f"{source}: {flag} must be one boolean")
        flags[flag] = values == {"true"}
    labels = graph.values(node, RDFS_LABEL)
    sections = graph.objects(node, IOP + "retrieval")
    if len(sections) > 1:
        raise ProfileError(f"{source}: the profile has more than one iop:retrieval section")
    retrieval = _retrieval_settings(graph, sections[0], source) if sections else RetrievalSettings()
    return Profile(
        id=node.value,
        revision=revision,
        source=source,
        label=min(labels) if labels else "",
        accepted=frozenset(accepted),
        relationships=tuple(relationships),
        permitted_domains=graph.values(node, IOP + "permittedDomain"),
        permitted_binding_domains=graph.values(node, IOP + "permittedBindingDomain"),
        cross_domain_bindings=flags["crossDomainBindings"],
        allowed_schemes=frozenset(s.lower() for s in schemes) or DEFAULT_SCHEMES,
        ignorable_terms=graph.values(node, IOP + "ignorableTerm"),
        permitted_types=graph.values(node, IOP + "permittedType"),
        allow_vocab=flags["allowVocab"],
        allow_base=flags["allowBase"],
        trusted_issuers=trusted,
        issuer_bindings=bindings,
        pins=pins,
        preferred_issuers=preferred,
        required_parameters=required,
        parameter_values=parameter_values,
        parameters=parameters,
        retrieval=retrieval,
        quads=tuple(pyoxigraph.Quad(q.subject, q.predicate, q.object, PROFILE_GRAPH)
                    for q in quads),
        digest=sha256(data).hexdigest(),
        shapes=tuple(sorted(graph.values(node, IOP + "shapes"))),
    )


class ShapeFile(NamedTuple):
    """One of a profile's shape files: its reference as the profile writes it, where it was
    read from, its bytes and their sha256 (a decision depends on them)."""

    reference: str
    source: str
    data: bytes
    digest: str


def load_shape_files(profile: Profile, retriever: "Retriever | None" = None) -> tuple[ShapeFile, ...]:
    """Read every shape file the profile names (iop:shapes).

    A relative reference is resolved beside the profile: in the package for a shipped
    profile, in its folder for a profile file, against its URL for a retrieved one. A URL
    is fetched only when the profile's retrieval section pins it (iop:pin), so a shape file
    cannot change under a profile that was reviewed. A local file that cannot be read is a
    :class:`ProfileError`; a URL that cannot be fetched is :class:`ProfileUnavailable`.
    """
    files = []
    for reference in profile.shapes:
        location = _shape_location(profile, reference)
        if is_remote(location):
            if location not in profile.retrieval.pins:
                raise ProfileError(
                    f"{profile.source}: the shape file {location} is not pinned: a remote "
                    "shape file needs an iop:pin (iop:url, iop:sha256) in the profile's "
                    "iop:retrieval section")
            if retriever is None:
                raise ProfileUnavailable(location, "retrieval.prohibited",
                                         f"the profile's shape file {location} is not "
                                         "retrieved: remote retrieval is off (allow its "
                                         "origin with --allow-remote)",
                                         (profile.id, profile.revision))
            try:
                data, source, _ = retriever.fetch_bytes(location, TURTLE_TYPES)
            except RetrievalError as exc:
                raise ProfileUnavailable(location, exc.code, exc.message,
                                         (profile.id, profile.revision)) from exc
        elif location.startswith(_SHIPPED):
            name = location[len(_SHIPPED):]
            try:
                data = _resources.read_bytes("profiles", name)
            except OSError as exc:
                raise ProfileError(f"{profile.source}: the shape file {reference!r} is not "
                                   "shipped with the package") from exc
            source = f"shipped shapes {name!r}"
        else:
            data, source = _read_file(location, ProfileError), location
        unknown = vocabulary.unknown_terms(data)
        if unknown:
            # Profiles are read strictly (contract): a shape file is part of the profile.
            raise ProfileError(f"{profile.source}: the shape file {reference!r}: "
                               + "; ".join(unknown), tuple(unknown))
        files.append(ShapeFile(reference, source, data, sha256(data).hexdigest()))
    return tuple(files)


_SHIPPED = "shipped:"


def _shape_location(profile: Profile, reference: str) -> str:
    if is_remote(reference) or os.path.isabs(reference):
        return reference
    if "://" in reference or reference.startswith(("file:", "urn:")):
        raise ProfileError(f"{profile.source}: the shape file {reference!r} is neither a path "
                           "nor an http(s) URL")
    if is_remote(profile.source):
        from urllib.parse import urljoin

        return urljoin(profile.source, reference)
    if profile.source.startswith("profile "):  # a shipped profile: its shapes are shipped
        if "/" in reference or "\\" in reference or reference.startswith("."):
            raise ProfileError(f"{profile.source}: a shipped profile names a shipped shape "
                               f"file by its name, not {reference!r}")
        return _SHIPPED + reference
    return os.path.join(os.path.dirname(os.path.abspath(profile.source)), reference)


def _task_parameters(graph: _Graph, node: Any, source: str) -> tuple[
        Mapping[str, Parameter], frozenset[str], Mapping[str, frozenset[str]]]:
    """The profile's task parameters (the built-in five and its iop:taskParameter
    declarations), the required ones and each one's allowed values, every value checked
    against its datatype."""
    parameters = dict(BUILT_IN)
    required: set[str] = set(graph.values(node, IOP + "requiresParameter"))
    allowed: dict[str, set[str]] = {}
    for entry in graph.objects(node, IOP + "taskParameter"):
        declared = _declaration(graph, entry, source)
        built_in = BUILT_IN.get(declared.name)
        if built_in is not None and declared != built_in:
            raise ProfileError(f"{source}: taskParameter {declared.name!r} restates a built-in "
                               f"parameter otherwise than the contract's table "
                               f"({declared} instead of {built_in})")
        if declared.name in parameters and built_in is None:
            raise ProfileError(f"{source}: taskParameter {declared.name!r} is declared twice")
        parameters[declared.name] = declared
        flag = [o.value for o in graph.objects(entry, IOP + "required")]
        if flag and (len(flag) > 1 or flag[0] not in ("true", "false")):
            raise ProfileError(f"{source}: taskParameter {declared.name!r}: iop:required must "
                               f"be one boolean, true or false (found {sorted(flag)})")
        if flag == ["true"]:
            required.add(declared.name)
        values = _allowed_values(graph, entry, declared, source)
        if values:
            allowed.setdefault(declared.name, set()).update(values)
    terms: dict[str, str] = {}
    for declared in parameters.values():
        if declared.term is not None and terms.setdefault(declared.term, declared.name) != (
                declared.name):
            raise ProfileError(f"{source}: taskParameters {terms[declared.term]!r} and "
                               f"{declared.name!r} are carried by the same term {declared.term}")
    for entry in graph.objects(node, IOP + "parameterConstraint"):
        name = graph.one(entry, IOP + "parameter", "parameterConstraint", source)
        listed = _allowed_values(graph, entry, parameters.get(name), source)
        if not listed:
            raise ProfileError(f"{source}: parameterConstraint on {name!r} has no allowedValue")
        allowed.setdefault(name, set()).update(listed)
    for name in sorted(required | set(allowed)):
        # Named only as required or constrained: a string compared equal (the form
        # profiles had before parameters were declared; docs/parameters.md).
        parameters.setdefault(name, Parameter(name, "string"))
    for name, stated in allowed.items():
        for value in sorted(stated):
            try:
                key(parameters[name], value)
            except ValueError as exc:
                raise ProfileError(f"{source}: an allowedValue of {name}: {exc}") from None
    return (MappingProxyType(parameters), frozenset(required),
            MappingProxyType({k: frozenset(v) for k, v in allowed.items()}))


def _allowed_values(graph: _Graph, entry: Any, parameter: Parameter | None,
                    source: str) -> frozenset[str]:
    """The iop:allowedValue of ``entry``, each a literal written plain or typed with the
    parameter's datatype: one typed otherwise (a unit given as its datatype, another
    datatype, a language tag) would be read as a plain value and compared as one, which the
    profile did not say (profiles are read strictly)."""
    kind = parameter or Parameter("", "string")
    where = f"an allowedValue of {parameter.name if parameter else 'the parameter'}"
    values = set()
    for value in graph.objects(entry, IOP + "allowedValue"):
        if isinstance(value, pyoxigraph.Literal):
            datatype = value.datatype.value
            typed = Value(value.value, datatype=None if datatype == XSD + "string" else datatype)
            problem = (f"it has a language tag (@{value.language})" if value.language
                       else datatype_problem(kind, typed))
        else:  # refused before, by the profile vocabulary's reading (a literal value)
            problem = "it is not a literal of the parameter's datatype"
        if problem is not None:
            raise ProfileError(f"{source}: {where} ({value}): {problem}")
        values.add(value.value)
    return frozenset(values)


def _declaration(graph: _Graph, entry: Any, source: str) -> Parameter:
    """One iop:taskParameter: its name, datatype and comparison (one each), term and unit
    (at most one each), each consistent with the others."""
    name = graph.one(entry, IOP + "name", "taskParameter", source)
    where = f"taskParameter {name!r}"
    datatype = DATATYPES[graph.one(entry, IOP + "datatype", where, source)]
    comparisons = graph.values(entry, IOP + "comparison")
    if len(comparisons) > 1:
        raise ProfileError(f"{source}: {where} has more than one iop:comparison "
                           f"({', '.join(sorted(comparisons))})")
    comparison = COMPARISONS[next(iter(comparisons))] if comparisons else "equal"
    terms, units = graph.values(entry, IOP + "term"), graph.values(entry, IOP + "unit")
    for member, found in (("iop:term", terms), ("iop:unit", units)):
        if len(found) > 1:
            raise ProfileError(f"{source}: {where} has more than one {member} "
                               f"({', '.join(sorted(found))})")
    term = next(iter(terms)) if terms else None
    unit = next(iter(units)) if units else None
    if not name.strip() or any(c in name for c in "=&#\n\r"):
        raise ProfileError(f"{source}: {where}: a name is a word a --param can spell "
                           "(no '=', '&', '#' or line break)")
    if comparison in ("atMost", "atLeast") and datatype not in ("integer", "decimal", "dateTime"):
        raise ProfileError(f"{source}: {where} compares {comparison} a {datatype}, which has "
                           "no order (integer, decimal and dateTime do)")
    if unit is not None and datatype not in ("integer", "decimal"):
        raise ProfileError(f"{source}: {where} has a unit, but a {datatype} is no quantity "
                           "(integer and decimal are)")
    if term is not None and term.startswith(IOA) and BUILT_IN.get(name, Parameter("", "")).term != term:
        raise ProfileError(f"{source}: {where} is carried by {term}, a term of the baseline "
                           "vocabulary, which means something else (6.1)")
    return Parameter(name, datatype, comparison, term, unit)


def _issuer_bindings(graph: _Graph, node: Any, trusted: frozenset[str],
                     source: str) -> dict[str, IssuerBinding]:
    """The profile's iop:issuerBinding entries by issuer, each checked: a trusted issuer
    that is not a did:key (whose key is its own), bound to did:key Ed25519 verification
    methods (a DID stands for its key, did:key:X#X)."""
    bindings: dict[str, IssuerBinding] = {}
    for entry in graph.objects(node, IOP + "issuerBinding"):
        issuer = graph.one(entry, IOP + "issuer", "issuerBinding", source)
        if issuer in bindings:
            raise ProfileError(f"{source}: more than one issuerBinding for {issuer}")
        if is_did_key(issuer):
            raise ProfileError(f"{source}: issuerBinding binds {issuer}, a did:key, whose only "
                               "key is its own: trust it with iop:trustedIssuer alone")
        if issuer not in trusted:
            raise ProfileError(f"{source}: issuerBinding binds {issuer}, which the profile does "
                               "not trust (iop:trustedIssuer): a proof never makes an issuer "
                               "trusted (7.2)")
        methods = set()
        for method in graph.values(entry, IOP + "verificationMethod"):
            try:
                public_key_of(method)
            except ValueError as exc:
                raise ProfileError(f"{source}: issuerBinding of {issuer}: {exc}") from None
            methods.add(method_of(method))
        if not methods:
            raise ProfileError(f"{source}: issuerBinding of {issuer} names no "
                               "iop:verificationMethod")
        required = graph.values(entry, IOP + "requireProof")
        if required - {"true", "false"} or len(required) > 1:
            raise ProfileError(f"{source}: requireProof of {issuer} must be one boolean")
        bindings[issuer] = IssuerBinding(issuer, frozenset(methods), required != {"false"})
    return bindings


def _retrieval_settings(graph: _Graph, section: Any, source: str) -> RetrievalSettings:
    origins = tuple(sorted(graph.values(section, IOP + "allowOrigin")))
    private = graph.values(section, IOP + "allowPrivateAddresses")
    if private - {"true", "false"} or len(private) > 1:
        raise ProfileError(f"{source}: allowPrivateAddresses must be one boolean")
    budgets: dict[str, Any] = {}
    for name, (field_name, whole) in RETRIEVAL_BUDGETS.items():
        values = graph.values(section, IOP + name)
        if not values:
            continue
        (text,) = values if len(values) == 1 else (None,)
        try:
            number = float(text) if text is not None else -1.0
        except ValueError:
            number = -1.0
        if (number <= 0 and not (name == "maxRedirects" and number == 0)) or (
                whole and not number.is_integer()):
            raise ProfileError(f"{source}: retrieval {name} must be one positive "
                               f"{'whole number' if whole else 'number'} (found {sorted(values)})")
        budgets[field_name] = int(number) if whole else number
    pins = {}
    for entry in graph.objects(section, IOP + "pin"):
        digest = graph.one(entry, IOP + "sha256", "retrieval pin", source).lower()
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ProfileError(f"{source}: retrieval pin sha256 {digest!r} is not 64 hex digits")
        pins[graph.one(entry, IOP + "url", "retrieval pin", source)] = digest
    return RetrievalSettings(origins, private == {"true"}, budgets, pins)


# --- alignment artifacts -------------------------------------------------------------------


class MappingRule(NamedTuple):
    source: str  # "from" in the artifact
    target: str  # "to" in the artifact
    # (parameter, lexical value, unit or None), by parameter; a condition listing several
    # values (alternatives) gives one entry each.
    conditions: tuple[tuple[str, str, str | None], ...]


class Artifact(NamedTuple):
    """An offered alignment artifact; ``problems`` is non-empty when it is malformed."""

    origin: str
    position: int
    digest: str
    document: Any
    problems: tuple[str, ...] = ()
    id: str = ""
    revision: str = ""
    source_ontology: tuple[str, str] = ("", "")
    target_ontology: tuple[str, str] = ("", "")
    direction: str = ""
    asserted_by: str = ""
    # The validity limits it states (7.2): not yet valid before valid_from, expired at or
    # after valid_until.
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    rules: tuple[MappingRule, ...] = ()
    confidence: float | None = None
    # Its Data Integrity proof as read and verified (None: it carries none); whether the
    # receiver accepts it is the trust policy's, at check time.
    proof: Proof | None = None
    # Members the project does not define, in document order: reported, never used.
    unknown_members: tuple[str, ...] = ()

    @property
    def malformed(self) -> bool:
        return bool(self.problems)

    def limits(self) -> dict[str, str | None]:
        """Its validity limits as written in a decision's dependencies (rule 15): the
        artifact's ``validFrom`` and ``validUntil``, its proof's ``created`` and ``expires``
        (None where absent), each an instant in UTC."""
        proof = self.proof
        return {"validFrom": _utc(self.valid_from), "validUntil": _utc(self.valid_until),
                "proofCreated": _utc(proof.created) if proof else None,
                "proofExpires": _utc(proof.expires) if proof else None}

    def validity_at(self, at: datetime) -> tuple[bool, bool, bool, bool]:
        """Where ``at`` stands against each validity limit (rule 15): before ``validFrom``,
        at or after ``validUntil``, before the proof's ``created``, at or after its
        ``expires``."""
        proof = self.proof
        return (self.valid_from is not None and at < self.valid_from,
                self.valid_until is not None and at >= self.valid_until,
                proof is not None and proof.created is not None and at < proof.created,
                proof is not None and proof.expires is not None and at >= proof.expires)

    @property
    def graph_name(self) -> str:
        """The IRI of the named graph that holds it (the decision compares these)."""
        return f"urn:ioa-semantic:graph:artifact:{self.position}"

    @property
    def graph(self) -> pyoxigraph.NamedNode:
        return pyoxigraph.NamedNode(self.graph_name)

    def label(self) -> dict[str, Any]:
        return {"artifactId": self.id or None, "revision": self.revision or None,
                "source": self.origin}


_ARTIFACT_SCHEMA: Any = None


def _artifact_schema() -> Any:
    global _ARTIFACT_SCHEMA
    if _ARTIFACT_SCHEMA is None:
        from jsonschema import Draft202012Validator, FormatChecker

        # "iri" is RFC 3987's IRI production, judged by the one function every IRI meets.
        formats = FormatChecker(())
        formats.checks("iri")(lambda value: not isinstance(value, str) or is_absolute_iri(value))
        _ARTIFACT_SCHEMA = Draft202012Validator(
            _resources.read_json("shapes", "artifact.schema.json"), format_checker=formats)
    return _ARTIFACT_SCHEMA


@cache
def artifact_members() -> frozenset[str]:
    """The members an artifact may carry: those its schema defines (contract rule 9)."""
    return frozenset(_resources.read_json("shapes", "artifact.schema.json")["properties"])


@cache
def rule_members() -> frozenset[str]:
    """The members a mapping rule may carry: those the schema defines for one."""
    schema = _resources.read_json("shapes", "artifact.schema.json")
    return frozenset(schema["properties"]["mappingRules"]["items"]["properties"])


def _unknown_members(doc: dict[str, Any]) -> tuple[str, ...]:
    """The members the project does not define, as paths: ``validUntill`` at the top,
    ``mappingRules/0/validUntil`` in a rule (contract rule 9: reported, never silently
    ignored; a rule's own limit would otherwise pass unread, 7.2)."""
    top = [k for k in doc if k not in artifact_members()]
    rules = doc.get("mappingRules")
    inner = [f"mappingRules/{i}/{k}" for i, rule in enumerate(rules if isinstance(rules, list)
                                                               else ())
             if isinstance(rule, dict) for k in rule if k not in rule_members()]
    proof = doc.get("proof")
    signed = [f"proof/{k}" for k in (proof if isinstance(proof, dict) else ())
              if k not in PROOF_MEMBERS]
    return (*top, *inner, *signed)


# The members of a proof this checker reads (Data Integrity 1.0, 2.1): any other, a limit
# misspelt (expiry) or one it does not evaluate (domain, challenge, nonce), is reported.
PROOF_MEMBERS = frozenset({"@context", "type", "cryptosuite", "created", "expires",
                           "verificationMethod", "proofPurpose", "proofValue",
                           "previousProof"})


def _utc(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def _readable_limit(doc: Any, member: str) -> Instant | None:
    """A malformed artifact's limit where it reads as an instant, else None."""
    if not isinstance(doc.get(member), str):
        return None
    try:
        return _limit(doc, member)
    except ValueError:
        return None


def _limit(doc: Any, member: str) -> Instant | None:
    """A validity limit of the artifact (the schema has held it to ISO-8601 with an offset)."""
    if member not in doc:
        return None
    try:
        return instant(doc[member])
    except ValueError as exc:
        raise ValueError(f"/{member}: {exc}") from None


def resolve_artifact(name_or_path: str) -> tuple[str, bytes]:
    shipped = _resources.shipped_alignments()
    if os.path.exists(name_or_path):
        return name_or_path, _read_file(name_or_path, ArtifactError)
    if name_or_path in shipped:
        return (f"alignment {name_or_path!r}",
                _resources.read_bytes("alignments", shipped[name_or_path]))
    raise ArtifactError(
        f"unknown alignment artifact {name_or_path!r}: no such file and not a shipped artifact "
        f"(shipped: {', '.join(shipped) or 'none'}){_mistyped(name_or_path, shipped)}")


def read_artifact(data: bytes, origin: str, index: int) -> Artifact:
    """Validate one artifact (7.2); a malformed one comes back with its problems listed."""
    digest = sha256(data).hexdigest()
    intake = parse(data)
    if not intake.ok:
        return Artifact(origin, index, digest, None,
                        tuple(f"{f.message} at {f.path or '/'}" for f in intake.findings))
    return artifact_from(intake.document, digest, origin, index)


def artifact_from(doc: Any, digest: str, origin: str, index: int) -> Artifact:
    """An artifact from its parsed document and the sha256 of the bytes it came from."""
    problems = tuple(
        f"{'/' + '/'.join(map(str, e.absolute_path)) if e.absolute_path else 'the artifact'}: "
        f"{e.message}"
        for e in sorted(_artifact_schema().iter_errors(doc), key=lambda e: list(e.absolute_path))
    )
    ident = doc.get("artifactId") if isinstance(doc.get("artifactId"), str) else ""
    revision = doc.get("revision") if isinstance(doc.get("revision"), str) else ""
    valid_from = valid_until = None
    if not problems:
        try:
            valid_from, valid_until = _limit(doc, "validFrom"), _limit(doc, "validUntil")
        except ValueError as exc:
            problems = (str(exc),)
    if not problems and valid_from is not None and valid_until is not None \
            and valid_from >= valid_until:
        problems = (f"/validFrom: {doc['validFrom']!r} is not before validUntil "
                    f"{doc['validUntil']!r}: the artifact is valid at no instant",)
    if problems:
        # Malformed, and excluded: what it states is still reported (its unknown members)
        # and recorded (each limit that reads as one, rule 15).
        return Artifact(origin, index, digest, doc, problems, id=ident, revision=revision,
                        valid_from=_readable_limit(doc, "validFrom"),
                        valid_until=_readable_limit(doc, "validUntil"),
                        unknown_members=_unknown_members(doc))
    rules = tuple(
        MappingRule(rule["from"], rule["to"], _conditions(rule["conditions"]))
        for rule in doc["mappingRules"]
    )
    confidence = doc.get("confidence")
    artifact = Artifact(
        origin, index, digest, doc,
        id=ident, revision=revision,
        source_ontology=(doc["sourceOntologyId"], doc["sourceOntologyVersion"]),
        target_ontology=(doc["targetOntologyId"], doc["targetOntologyVersion"]),
        direction=doc["direction"],
        asserted_by=doc["assertedBy"],
        valid_from=valid_from,
        valid_until=valid_until,
        rules=rules,
        confidence=float(confidence) if confidence is not None else None,
        proof=read_proof(doc),
        unknown_members=_unknown_members(doc),
    )
    try:
        artifact_quads(artifact)
    except (ValueError, SyntaxError) as exc:  # pyoxigraph's, mapped where an artifact is read
        return artifact._replace(problems=(f"the artifact is not RDF the store accepts: {exc}",))
    return artifact


def _conditions(stated: Mapping[str, Any]) -> tuple[tuple[str, str, str | None], ...]:
    """A rule's conditions as (parameter, lexical value, unit) entries (the schema has held
    each to a string, a number, a {value, unit} object or a list of those)."""
    out = []
    for name, value in sorted(stated.items()):
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict):
                out.append((name, _condition_lexical(item["value"]), item.get("unit")))
            else:
                out.append((name, _condition_lexical(item), None))
    return tuple(dict.fromkeys(out))


def _condition_lexical(value: str | int | float) -> str:
    if isinstance(value, float):
        return number_text(value)  # the JSON number's text, not a rounding
    return str(value)


def artifact_quads(artifact: Artifact) -> list[pyoxigraph.Quad]:
    """The artifact in RDF, read through the project's artifact context."""
    # The proof says who signed the artifact, not what it maps: it is no part of its RDF.
    # A member the project does not define is reported, never read (a keyword such as
    # @graph there would otherwise add statements of the sender's choosing).
    members = artifact_members() - {"@context", "proof"}
    doc = {k: v for k, v in artifact.document.items() if k in members}
    doc["mappingRules"] = [
        {"from": r.source, "to": r.target,
         "conditions": [{"parameter": k, "value": v, **({"unit": u} if u else {})}
                        for k, v, u in r.conditions]}
        for r in artifact.rules
    ]
    doc["@context"] = _resources.read_json("contexts", "alignment-artifact.jsonld")["@context"]
    text = json.dumps(doc)
    return [pyoxigraph.Quad(q.subject, q.predicate, q.object, artifact.graph)
            for q in pyoxigraph.parse(text, pyoxigraph.RdfFormat.JSON_LD)]


# --- capability registrations ------------------------------------------------------------


class Registration(NamedTuple):
    """An offered capability registration (6.3), read under one ontology and version."""

    iri: str
    ontology: tuple[str, str]
    origin: str
    position: int
    inputs: frozenset[str] = frozenset()
    outputs: frozenset[str] = frozenset()
    source_langs: frozenset[str] = frozenset()
    target_langs: frozenset[str] = frozenset()
    # Its constraints on the profile's own declared parameters, by name: each value as
    # stated (lexical form and unit); compared with the task by the declaration (rule 11).
    constraints: Mapping[str, tuple[Value, ...]] = MappingProxyType({})

    @property
    def graph_name(self) -> str:
        """The IRI of the named graph that holds it (the decision compares these)."""
        return f"urn:ioa-semantic:graph:registration:{self.position}"

    @property
    def graph(self) -> pyoxigraph.NamedNode:
        return pyoxigraph.NamedNode(self.graph_name)

    def quads(self) -> list[pyoxigraph.Quad]:
        subject = pyoxigraph.NamedNode(self.iri)
        g = self.graph

        def lit(value: str) -> pyoxigraph.Literal:
            return pyoxigraph.Literal(value)

        out = [
            pyoxigraph.Quad(subject, pyoxigraph.NamedNode(RDF_TYPE),
                            pyoxigraph.NamedNode(IOA + "Capability"), g),
            pyoxigraph.Quad(subject, pyoxigraph.NamedNode(IOA + "ontologyId"),
                            pyoxigraph.NamedNode(self.ontology[0]), g),
            pyoxigraph.Quad(subject, pyoxigraph.NamedNode(IOA + "ontologyVersion"),
                            lit(self.ontology[1]), g),
        ]
        for prop, values in (("inputs", self.inputs), ("outputs", self.outputs),
                             ("sourceLang", self.source_langs), ("targetLang", self.target_langs)):
            out.extend(pyoxigraph.Quad(subject, pyoxigraph.NamedNode(IOA + prop), lit(v), g)
                       for v in sorted(values))
        return out

    def constraint_quads(self, declared: Mapping[str, Parameter]) -> list[pyoxigraph.Quad]:
        """Its constraints on declared parameters, each by the parameter's term (the lexical
        form; a unit is the decision's to compare, not the shapes')."""
        return [pyoxigraph.Quad(pyoxigraph.NamedNode(self.iri), pyoxigraph.NamedNode(term),
                                pyoxigraph.Literal(value.lexical), self.graph)
                for name, values in sorted(self.constraints.items())
                if (term := declared[name].term) is not None
                for value in values]


def registration_from_node(node: dict[str, Any], origin: str, index: int,
                           default_ontology: tuple[str, str] | None,
                           declared: Mapping[str, Parameter] = BUILT_IN) -> Registration | str:
    """A registration from its expanded node, or why it cannot be read: it names no
    ontology, or a constraint on a declared parameter is not a value of its datatype."""

    def values(prop: str) -> "list[str]":
        return [v.get("@value", v.get("@id")) for v in node.get(IOA + prop, [])]

    ontology_id = values("ontologyId")
    version = values("ontologyVersion")
    if ontology_id and version:
        ontology = (ontology_id[0], version[0])
    elif not ontology_id and not version and default_ontology is not None:
        ontology = default_ontology
    elif ontology_id or version:
        # Half a pair is no ontology: reading it under the profile's would guess the other
        # half (rule 5), and blaming the profile would send its operator the wrong way.
        named, absent = ("ontologyId", "ontologyVersion") if ontology_id else (
            "ontologyVersion", "ontologyId")
        return (f"the registration names an {named} but no {absent}: an ontology is named "
                "by the pair")
    else:
        return ("the registration names no ontologyId and ontologyVersion pair, and the profile "
                "does not accept exactly one ontology to read it under")
    constraints = _constraints(node, declared)
    if isinstance(constraints, str):
        return constraints
    return Registration(
        iri=node["@id"],
        ontology=ontology,
        origin=origin,
        position=index,
        inputs=frozenset(values("inputs")),
        outputs=frozenset(values("outputs")),
        source_langs=frozenset(values("sourceLang")),
        target_langs=frozenset(values("targetLang")),
        constraints=constraints,
    )


def _constraints(node: dict[str, Any],
                 declared: Mapping[str, Parameter]) -> Mapping[str, tuple[Value, ...]] | str:
    """The node's values of the profile's own declared parameters (the contract's five are
    members of their own), or why one is not a value of its parameter's datatype."""
    found: dict[str, tuple[Value, ...]] = {}
    for parameter, values, problem in _declared_values(node, declared):
        if problem is not None:
            return problem
        found[parameter.name] = tuple(dict.fromkeys(values))
    return MappingProxyType(found)


def _declared_values(node: dict[str, Any], declared: Mapping[str, Parameter]) -> Iterator[
        tuple[Parameter, list[Value], str | None]]:
    """Each of the profile's own declared parameters the node states: its values, or why
    one of them is not a value of the parameter's datatype."""
    for parameter in declared.values():
        if parameter.name in BUILT_IN or parameter.term is None or parameter.term not in node:
            continue
        read, problem = [], None
        for item in node[parameter.term]:
            value = value_of(item)
            if value is None:
                problem = "not a literal, an IRI or a quantity value"
                break
            try:
                key(parameter, value.lexical)
            except ValueError as exc:
                problem = str(exc)
                break
            problem = datatype_problem(parameter, value)
            if problem is not None:
                break
            read.append(value)
        yield parameter, read, None if problem is None else (
            f"its {parameter.name} ({parameter.term}) is not a value of "
            f"{describe(parameter)}: {problem}")


def registration_parameter_problems(node: dict[str, Any], declared: Mapping[str, Parameter]
                                    ) -> list[tuple[str, str]]:
    """What an audit reports of a registration's values of the profile's own parameters, as
    (code, message): a value not of the declared datatype, or stated in another unit than
    the declaration's (6.4: values use the profile's types and units; never converted)."""
    found = []
    for parameter, values, problem in _declared_values(node, declared):
        if problem is not None:
            found.append(("registration.parameter-type", f"the registration: {problem}"))
            continue
        for value in values:
            other = unit_problem(parameter, value.unit)
            if other is not None:
                found.append(("registration.unit-conflict",
                              f"the registration's {parameter.name} {value.lexical}: {other}"))
    return found
