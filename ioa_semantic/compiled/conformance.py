"""Conformance functions: the baseline shapes compiled into one Python function each.

Each function says whether a node conforms to its shape, with the semantics of
:func:`ioa_semantic.pipeline.shapes.evaluate_node` finding no violation (the tests hold the
two together member by member and on every value form). A node then costs one call, not one
per property shape and member. The compiler covers the SHACL Core subset the shapes use, and
:func:`~ioa_semantic.pipeline.shapes.compile_shapes` refuses anything else.
"""

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from mypy_extensions import mypyc_attr

from .._vocab import RDF_TYPE, XSD
from ..pipeline.shapes import (
    NODE_KIND_OK,
    NodeShape,
    PropertyShape,
    ShapeSet,
    datatype_of,
    lexical_form,
    node_kind_of,
)

Conformance = Callable[[dict[str, Any]], bool]

# A pattern's answers remembered, per pattern: strings up to SEARCHED_CHARS long, at most
# SEARCHED_ENTRIES of them (about 2 MiB a pattern at the longest), forgotten all at once
# when full so that the memo follows the senders of the moment.
SEARCHED_ENTRIES = 4096
SEARCHED_CHARS = 256


@mypyc_attr(native_class=False)  # a dict subclass: its lookups are dict's own, in C
class SearchMemo(dict[str, bool]):
    """Whether ``pattern`` finds a match in each string looked up (``memo[text]``): the
    same media types and language tags come back registration after registration, and a
    hit is one dictionary lookup instead of a regular expression's search."""

    def __init__(self, search: Callable[[str], Any]) -> None:
        super().__init__()
        self.search = search
        self.misses = 0  # lookups that ran the search: what the memo did not save

    def __missing__(self, text: str) -> bool:
        self.misses += 1
        found = self.search(text) is not None
        if len(text) <= SEARCHED_CHARS:
            if len(self) >= SEARCHED_ENTRIES:
                self.clear()
            self[text] = found
        return found


class _ValueCheck(NamedTuple):
    """Every per-value constraint of a property shape, and the two value forms it can answer
    without them: the restricted expansion yields {"@id": iri} and {"@value": "text"} nearly
    always, and for those the constraints reduce to one pattern search, or to nothing."""

    check: Callable[[Any], bool]
    iri_fits: bool  # {"@id": iri} meets the node kind and datatype constraints
    text_fits: bool  # {"@value": "text"} does
    search: Callable[[str], Any] | None


def _value_check(prop: PropertyShape) -> _ValueCheck | None:
    kinds = NODE_KIND_OK[prop.node_kind] if prop.node_kind else None
    datatype, pattern = prop.datatype, prop.pattern
    if kinds is None and datatype is None and pattern is None:
        return None

    def check(value: Any) -> bool:
        if kinds is not None and node_kind_of(value) not in kinds:
            return False
        if datatype is not None and datatype_of(value) != datatype:
            return False
        if pattern is not None:
            text = lexical_form(value)
            if text is None or not pattern.search(text):
                return False
        return True

    return _ValueCheck(check,
                       iri_fits=(kinds is None or "IRI" in kinds) and datatype is None,
                       text_fits=(kinds is None or "Literal" in kinds)
                       and datatype in (None, XSD + "string"),
                       search=pattern.search if pattern is not None else None)


def _value_lines(value_check: _ValueCheck, index: int, names: dict[str, Any],
                 is_type: bool) -> list[str]:
    """Lines that check every value in ``values``: a common form that meets the constraints
    is accepted inline, and anything else gets the full per-value check, which decides."""
    names[f"CHECK{index}"] = value_check.check
    search = value_check.search
    names[f"SEARCHED{index}"] = SearchMemo(search) if search is not None else None
    searched = f" and SEARCHED{index}[text]" if search is not None else ""
    if is_type:  # @type holds bare IRIs: each is checked as the IRI node it names
        fast = (f"type(text) is str and not text.startswith('_:'){searched}"
                if value_check.iri_fits else "False")
        return ["for text in values:",
                f"    if not ({fast}) and not CHECK{index}({{'@id': text}}): return False"]
    forms = []
    if value_check.iri_fits:
        forms.append(f"type(text := v.get('@id')) is str and not text.startswith('_:'){searched}")
    if value_check.text_fits:
        forms.append(f"type(text := v.get('@value')) is str{searched}")
    fast = (f"type(v) is dict and len(v) == 1 and ({' or '.join(f'({f})' for f in forms)})"
            if forms else "False")
    return ["for v in values:", f"    if not ({fast}) and not CHECK{index}(v): return False"]


def _property_lines(prop: PropertyShape, index: int, names: dict[str, Any]) -> list[str]:
    """The source lines that check one property shape on ``node``, returning False on a
    violation; the constants they read are put in ``names``."""
    low = prop.min_count or 0
    per_value = _value_check(prop)
    is_type = prop.path == RDF_TYPE
    names[f"PATH{index}"] = "@type" if is_type else prop.path
    # A property shape with no minimum and no required value holds when the node lacks the
    # property: its checks run only when the member is there.
    optional = not low and prop.has_value is None
    body: list[str] = []
    if low:
        body.append(f"if len(values) < {low}: return False")
    if prop.max_count is not None:
        body.append(f"if len(values) > {prop.max_count}: return False")
    if prop.has_value is not None:
        names[f"HAS{index}"] = prop.has_value
        if is_type:
            body.append(f"if HAS{index} not in values: return False")
        else:
            body += ["for v in values:",
                     f"    if isinstance(v, dict) and v.get('@id') == HAS{index}: break",
                     "else:",
                     "    return False"]
    if per_value is not None:
        body += _value_lines(per_value, index, names, is_type)
    if not body:
        return []
    if optional:
        return [f"values = node.get(PATH{index})", "if values is not None:",
                *(f"    {line}" for line in body)]
    return [f"values = node.get(PATH{index}, ())", *body]


def compile_conformance(shape: NodeShape) -> Conformance:
    """A function that says whether a node conforms to ``shape``, with the same semantics as
    :func:`evaluate_node` finding no violation (the tests hold the two together).

    The function is generated as Python source, one straight run of checks per shape: a node
    then costs one call, not one per property shape and member.
    """
    names: dict[str, Any] = {"node_kind_of": node_kind_of}
    lines: list[str] = []
    if shape.node_kind:
        names["KINDS"] = frozenset(NODE_KIND_OK[shape.node_kind])
        lines.append("if node_kind_of(node) not in KINDS: return False")
    if shape.closed:
        names["ALLOWED"] = shape.allowed
        # Keywords are outside the closed set; a node of IRIs, @id and @type passes in C.
        names["ALLOWED_AND_KEYWORDS"] = shape.allowed | {"@id", "@type"}
        lines += ["if not ALLOWED_AND_KEYWORDS.issuperset(node):",
                  "    for key in node:",
                  "        if key[:1] != '@' and key not in ALLOWED: return False"]
    for index, prop in enumerate(shape.properties):
        lines += _property_lines(prop, index, names)
    source = "def conforms(node):\n" + "".join(f"    {line}\n" for line in lines) + \
        "    return True\n"
    exec(compile(source, f"<conformance of {shape.name}>", "exec"), names)
    conforms: Conformance = names["conforms"]
    return conforms


class CompiledShapes:
    """A :class:`ShapeSet`'s shapes as conformance functions, with the targets indexed so that
    finding a node's shapes is a few lookups; built once per process, each family's shapes
    when a document of that family is first judged (a check of one envelope compiles no
    registration shape: compiling one is half a millisecond)."""

    def __init__(self, shapes: ShapeSet) -> None:
        self.shapes = shapes
        self._checks: dict[tuple[Any, ...], tuple[Conformance, ...]] = {}
        self.single_valued = {
            family: frozenset(p.path for s in shapes.shapes.values() if s.family == family
                              for p in s.properties if p.max_count is not None and p.max_count <= 1)
            for family in ("envelope", "registration")
        }
        # By family: the conformance function of each of its shapes by name, and its targets
        # by IRI, so that finding a node's shapes is a few lookups. Threads that compile a
        # family at once each put a whole entry, of the same functions' meaning.
        self._families: dict[str, tuple[dict[str, Conformance],
                                        tuple[dict[str, tuple[Conformance, ...]], ...]]] = {}

    def _family(self, family: str) -> tuple[dict[str, Conformance],
                                            tuple[dict[str, tuple[Conformance, ...]], ...]]:
        """``family``'s conformance functions by shape name and its targets, compiled now
        if they were not yet."""
        compiled = self._families.get(family)
        if compiled is not None:
            return compiled
        shapes = [shape for shape in self.shapes.shapes.values() if shape.family == family]
        conformance = {shape.name: compile_conformance(shape) for shape in shapes}
        indexes: tuple[dict[str, list[str]], ...] = ({}, {}, {})
        for shape in shapes:
            for index, targets in zip(indexes, (shape.target_classes, shape.target_subjects_of,
                                                shape.target_objects_of), strict=True):
                for target in targets:
                    index.setdefault(target, []).append(shape.name)
        compiled = (conformance, tuple(
            {iri: tuple(conformance[n] for n in dict.fromkeys(names))
             for iri, names in index.items()} for index in indexes))
        self._families[family] = compiled
        return compiled

    def conforms(self, root_shape: NodeShape,
                 walked: Iterable[tuple[dict[str, Any], str | None]]) -> bool:
        """Whether the expanded graph has no violation (the compiled path).

        ``walked`` are its nodes as the restricted walk found them, each with the property
        that reached it (None: the root), so that no second walk looks for them.
        """
        memo = self._checks
        root_name = root_shape.name
        for node, via in walked:
            # Which shapes apply depends only on how the node is reached, its types and its
            # properties: the same few combinations come back document after document.
            key = (root_name if via is None else via, tuple(node.get("@type", ())), tuple(node))
            checks = memo.get(key)
            if checks is None:
                checks = self._checks_for(root_shape, node, via)
                if len(memo) < 4096 and len(node) <= 32 and sum(map(len, node)) <= 2048:
                    memo[key] = checks
            for check in checks:
                if not check(node):
                    return False
        return True

    def any_string(self, family: str) -> frozenset[str]:
        """The properties any one plain string meets as a value in every shape of ``family``
        (no pattern, no required value, a node kind and a datatype a string literal has):
        whatever such a value says, the shapes judge its node alike."""
        shapes = [shape for shape in self.shapes.shapes.values() if shape.family == family]
        found = set()
        for path in {prop.path for shape in shapes for prop in shape.properties} - {RDF_TYPE}:
            if all(prop.pattern is None and prop.has_value is None
                   and prop.datatype in (None, XSD + "string")
                   and (prop.node_kind is None or "Literal" in NODE_KIND_OK[prop.node_kind])
                   for shape in shapes for prop in shape.properties if prop.path == path):
                found.add(path)
        return frozenset(found)

    def _checks_for(self, root_shape: NodeShape, node: dict[str, Any],
                    via: str | None) -> tuple[Conformance, ...]:
        conformance, targets = self._family(root_shape.family)
        by_class, by_subject, by_object = targets
        # A shape targets a node in several ways (class, subjects of each of its
        # properties); the set checks it once.
        checks: set[Conformance] = {conformance[root_shape.name]} if via is None else set(
            by_object.get(via, ()))
        for t in node.get("@type", ()):
            checks.update(by_class.get(t, ()))
        for prop in node:
            if prop[:1] != "@":
                checks.update(by_subject.get(prop, ()))
        return tuple(checks)
