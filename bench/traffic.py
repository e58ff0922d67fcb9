"""Corpora that look like real traffic, made by code from a fixed seed.

Two kinds of input, each as bytes one document apiece (no trailing newline):

* capability registrations (draft 6.3 shape) for ``ioa-check audit``: ``registrations(size,
  senders)`` draws each registration's sender from ``senders`` senders (a Zipf-like share, as
  a directory's traffic is: a few senders send most), or makes every registration a sender
  of its own (``senders=None``). A sender has its own context layout (one object or an array
  of two, its own term names, term definition forms, key order, ``@version``/``@protected``
  or not), its own member order, its own namespace and prefix names, its own media types
  (standard ones and a vendor tree of its own), ``urn:`` or ``https:`` ids (compact or in
  full), labels in its own script (Latin, CJK, Cyrillic, Arabic, emoji; some with ``\\n``),
  and its own JSON writer (compact or spaced separators, ``\\u00e9`` escapes or raw UTF-8,
  ``\\/`` or ``/``). About 4% of registrations are invalid, spread over the invalid classes
  of bench/bench_audit.py. ``uniform(size)`` is bench/bench_audit.py's own corpus (one
  sender, the 6.3 context, 1% invalid), kept as the baseline row;
* task envelopes (draft 6.2 shape, also the envelope of the 12.1 case): ``envelopes(size,
  senders)`` draws each from ``senders`` layouts (``1``: the example's layout, ``None``:
  every envelope a layout of its own). Every envelope is distinct (an ``@id`` of its own)
  and compatible with cs-translation: a sender changes how it writes, not what it means.

Everything is a function of (seed, corpus, index): the same call gives the same bytes.
"""

from __future__ import annotations

import bisect
import json
import random
import sys
from collections.abc import Iterator
from functools import lru_cache
from itertools import accumulate
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_audit  # noqa: E402  (the uniform corpus and its invalid classes)

SEED = 20261201
IOA = "https://example.org/ioa/semantic#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
CS = "https://example.org/onto/cs#"
ENVELOPE_62 = json.loads((ROOT / "examples" / "envelope-6.2.jsonld").read_text())

# --- registrations --------------------------------------------------------------------------

IOA_PREFIXES = ["ioa", "sem", "i", "core", "iop", "agent", "v"]
OWN_PREFIXES = ["cs", "org", "acme", "svc", "p", "ex", "cap", "my", "co", "reg"]
TERM_NAMES = {
    "inputs": ["inputs", "in", "accepts", "consumes", "inputTypes", "input"],
    "outputs": ["outputs", "out", "produces", "emits", "outputTypes", "output"],
    "label": ["label", "name", "title", "caption", "displayName"],
}
STANDARD_MEDIA = ["text/plain", "text/html", "text/markdown", "text/csv", "application/json",
                  "application/pdf", "application/xml", "image/png", "image/jpeg", "audio/mpeg",
                  "video/mp4", "application/ld+json", "application/octet-stream", "image/svg+xml"]
WORDS = ["doc", "memo", "scan", "chart", "audio", "sheet", "slide", "note", "form", "ticket"]
# Labels by script: some carry accents that an ASCII writer escapes (\u00e9), some a newline.
LABELS = {
    "latin": ["Technical document translation", "Traduction de documents techniques",
              "Übersetzung technischer Dokumente", "Traducción técnica rápida",
              "Résumé automatique\nde rapports", "Çeviri hizmeti"],
    "cjk": ["技术文档翻译", "技術文書の翻訳", "기술 문서 번역", "自动摘要服务\n第二版"],
    "cyrillic": ["Перевод технической документации", "Распознавание текста",
                 "Сводка отчётов\nверсия 2"],  # noqa: RUF001 (Cyrillic on purpose)
    "arabic": ["ترجمة المستندات التقنية", "تلخيص التقارير", "التعرف الضوئي على الحروف"],
    "emoji": ["Translate 📄➡️📝", "🚀 fast OCR", "Summaries ✨ for 📊 reports", "🌐 i18n ✅\nbeta"],
}
SCRIPTS = list(LABELS)
MEMBERS = ["@context", "@id", "@type", "label", "inputs", "outputs"]


def _rng(*parts: object) -> random.Random:
    return random.Random("/".join(map(str, parts)))


def _shuffled(rng: random.Random, items: list[Any]) -> list[Any]:
    items = list(items)
    rng.shuffle(items)
    return items


class Sender:
    """How one sender writes its registrations."""

    def __init__(self, seed: int, number: int) -> None:
        rng = _rng(seed, "sender", number)
        self.number = number
        self.ioa = rng.choice(IOA_PREFIXES)
        self.own = rng.choice(OWN_PREFIXES) + (str(number % 97) if rng.random() < 0.5 else "")
        host = f"s{number}.{rng.choice(['example.com', 'example.net', 'example.org'])}"
        self.namespace = f"https://{host}/{rng.choice(['onto', 'caps', 'ns', 'v1/c'])}#"
        self.urn = f"urn:{rng.choice(['example', 'x-reg', 'agent'])}:s{number}:"
        self.id_style = rng.choice(["compact", "https", "urn", "urn", "compact"])
        self.terms = {key: rng.choice(names) for key, names in TERM_NAMES.items()}
        # How each term is defined: a compact IRI string, {"@id": ...}, the IRI in full, or
        # no definition at all (the member is then written as a compact IRI).
        self.forms = {key: rng.choice(["string", "object", "full", "set", "compact-key"])
                      for key in TERM_NAMES}
        if self.forms["label"] == "set":
            self.forms["label"] = "object"
        self.versioned = rng.random() < 0.6
        self.protected = self.versioned and rng.random() < 0.7
        self.split_context = rng.random() < 0.25  # an array of two context objects
        self.type_full = rng.random() < 0.15  # @type as the IRI in full
        self.members = _shuffled(rng, MEMBERS) if rng.random() < 0.7 else list(MEMBERS)
        self.script = rng.choice(SCRIPTS)
        self.ascii = rng.random() < 0.35  # escapes every non-ASCII character as \uXXXX
        self.slash = rng.random() < 0.15  # writes "/" as "\/" (some JSON writers do)
        self.compact = rng.random() < 0.5
        vendor = [f"application/vnd.{self.own}.{w}+json" for w in rng.sample(WORDS, 3)]
        self.media = rng.sample(STANDARD_MEDIA, rng.randint(2, 5)) + vendor
        self.context = self._context(rng)

    def key(self, term: str) -> str:
        if self.forms[term] == "compact-key":
            prefix = "rdfs" if term == "label" else self.ioa
            return f"{prefix}:{term}"
        return self.terms[term]

    def _context(self, rng: random.Random) -> Any:
        prefixes: dict[str, Any] = {self.ioa: IOA, "rdfs": RDFS, self.own: self.namespace}
        terms: dict[str, Any] = {}
        for term in TERM_NAMES:
            prefix, local = ("rdfs", "label") if term == "label" else (self.ioa, term)
            iri = f"{prefix}:{local}"
            full = (RDFS if term == "label" else IOA) + local
            form = self.forms[term]
            if form == "string":
                terms[self.terms[term]] = iri
            elif form == "object":
                terms[self.terms[term]] = {"@id": iri}
            elif form == "full":
                terms[self.terms[term]] = full
            elif form == "set":
                terms[self.terms[term]] = {"@id": iri, "@container": "@set"}
        head: dict[str, Any] = {}
        if self.versioned:
            head["@version"] = 1.1
        if self.protected:
            head["@protected"] = True
        if self.split_context:
            first = dict(head)
            first.update(_shuffled_dict(rng, prefixes))
            return [first, _shuffled_dict(rng, terms)]
        body = _shuffled_dict(rng, {**prefixes, **terms})
        return {**head, **body} if rng.random() < 0.7 else {**body, **head}

    def identifier(self, index: int, rng: random.Random) -> str:
        local = f"{rng.choice(['Translate', 'Summarise', 'Ocr', 'Classify', 'Convert'])}{index}"
        style = self.id_style
        if rng.random() < 0.1:  # a sender's ids are not all written one way
            style = "https" if style == "urn" else "urn"
        if style == "compact":
            return f"{self.own}:{local}"
        if style == "https":
            return self.namespace + local
        return self.urn + local.lower()

    def registration(self, index: int, rng: random.Random) -> dict[str, Any]:
        kind = f"{self.ioa}:Capability" if not self.type_full else IOA + "Capability"
        values: dict[str, Any] = {
            "@context": self.context,
            "@id": self.identifier(index, rng),
            "@type": kind if rng.random() < 0.9 else [kind],  # the profile permits no other type
            "label": f"{rng.choice(LABELS[self.script])} #{index}",
            "inputs": rng.sample(self.media, rng.randint(1, 2)),
            "outputs": rng.sample(self.media, rng.randint(1, 2)),
        }
        return {m if m.startswith("@") else self.key(m): values[m] for m in self.members}

    def dumps(self, doc: dict[str, Any]) -> bytes:
        separators = (",", ":") if self.compact else (", ", ": ")
        text = json.dumps(doc, ensure_ascii=self.ascii, separators=separators)
        if self.slash:
            text = text.replace("/", "\\/")
        return text.encode()


def _shuffled_dict(rng: random.Random, items: dict[str, Any]) -> dict[str, Any]:
    return dict(_shuffled(rng, list(items.items())))


def _invalidate(sender: Sender, doc: dict[str, Any], klass: int) -> None:
    """bench/bench_audit.py's invalid classes, in the sender's own terms."""
    inputs, outputs = sender.key("inputs"), sender.key("outputs")
    if klass == 0:
        doc.pop("@id")
    elif klass == 1:
        doc["@id"] = "TechTranslation"  # a relative reference
    elif klass == 2:
        doc["@id"] = "xx:Thing"  # a scheme that is not allowed
    elif klass == 3:
        doc["@type"] = f"{sender.ioa}:Intent"
    elif klass == 4:
        doc.pop(inputs)
    elif klass == 5:
        doc[outputs] = []
    elif klass == 6:
        doc[inputs] = ["text"]
    elif klass == 7:
        doc[outputs] = [5]
    else:
        doc["type"] = "Capability"  # a member no term defines


INVALID_SHARE = 0.04
INVALID_CLASSES = len(bench_audit.INVALID_CLASSES)


@lru_cache(maxsize=65536)
def sender(seed: int, number: int) -> Sender:
    return Sender(seed, number)


def zipf_cumulative(senders: int) -> list[float]:
    return list(accumulate(1.0 / (k + 1) for k in range(senders)))


def registrations(size: int, senders: int | None, seed: int = SEED,
                  invalid_share: float = INVALID_SHARE) -> Iterator[bytes]:
    """``size`` registrations from ``senders`` senders (None: each its own sender)."""
    rng = _rng(seed, "registrations", senders, "stream")
    cumulative = zipf_cumulative(senders) if senders else []
    total = cumulative[-1] if cumulative else 0.0
    invalid_seen = 0
    for index in range(size):
        number = (index if senders is None else
                  min(bisect.bisect(cumulative, rng.random() * total), senders - 1))
        who = Sender(seed, 1_000_000 + number) if senders is None else sender(seed, number)
        doc = who.registration(index, rng)
        if rng.random() < invalid_share:
            _invalidate(who, doc, invalid_seen % INVALID_CLASSES)
            invalid_seen += 1
        yield who.dumps(doc)


def uniform(size: int) -> Iterator[bytes]:
    """bench/bench_audit.py's corpus: one sender, one layout, varied IRIs and labels."""
    for index in range(size):
        yield bench_audit.registration(index).encode()


def write(path: Path, lines: Iterator[bytes]) -> int:
    """Write a JSON Lines corpus; returns its number of lines."""
    count = 0
    with path.open("wb") as handle:
        for line in lines:
            handle.write(line + b"\n")
            count += 1
    return count


REGISTRATION_CORPORA = {
    "uniform (bench_audit)": lambda size, seed=SEED: uniform(size),
    "5 senders": lambda size, seed=SEED: registrations(size, 5, seed),
    "5,000 senders": lambda size, seed=SEED: registrations(size, 5000, seed),
    "each its own sender": lambda size, seed=SEED: registrations(size, None, seed),
}

# --- envelopes ------------------------------------------------------------------------------

ENVELOPE_TERMS = {
    "ontologyId": ["ontologyId", "ontology"],
    "ontologyVersion": ["ontologyVersion", "version", "ontoVersion"],
    "capabilityRefs": ["capabilityRefs", "capabilities", "caps"],
    "intentRef": ["intentRef", "intent"],
    "profileContext": ["profileContext", "context", "ctx"],
    "domain": ["domain", "field"],
    "termBindings": ["termBindings", "bindings"],
    "term": ["term", "word"],
    "sense": ["sense", "meaning"],
}
REFERENCES = {"ontologyId", "capabilityRefs", "intentRef", "domain", "sense"}


class EnvelopeSender:
    """How one sender writes its task envelopes (what they mean is the 6.2 example's)."""

    def __init__(self, seed: int, number: int) -> None:
        self.number = number
        if number == 0:  # the example's own layout
            self.context: Any = ENVELOPE_62["@context"]
            self.names = {term: term for term in ENVELOPE_TERMS}
            self.ioa, self.cs, self.full_iris, self.indent = "ioa", "cs", False, 2
            self.order: list[str] | None = None
            self.ascii, self.slash = True, False
            return
        rng = _rng(seed, "envelope-sender", number)
        self.ioa = rng.choice(IOA_PREFIXES)
        self.cs = rng.choice(["cs", "c", "onto", "compsci", "k"])
        self.names = {term: rng.choice(names) for term, names in ENVELOPE_TERMS.items()}
        self.full_iris = rng.random() < 0.2  # references written as IRIs in full
        self.indent = rng.choice([None, None, 2, 4, 1])
        self.ascii = rng.random() < 0.5
        self.slash = rng.random() < 0.15
        self.order = _shuffled(rng, ["@context", "@id", "@type", *[
            self.names[t] for t in ("ontologyId", "ontologyVersion", "capabilityRefs",
                                    "intentRef", "profileContext")]])
        context: dict[str, Any] = {self.ioa: IOA, self.cs: CS}
        for term, name in self.names.items():
            iri = f"{self.ioa}:{term}"
            if term in REFERENCES:
                definition: Any = {"@id": iri, "@type": "@id"}
                if term == "capabilityRefs" and rng.random() < 0.6:
                    definition["@container"] = "@set"
            else:
                definition = iri if rng.random() < 0.6 else {"@id": iri}
            context[name] = definition
        context = _shuffled_dict(rng, context)
        if rng.random() < 0.7:
            context = {"@version": 1.1, **({"@protected": True} if rng.random() < 0.7 else {}),
                       **context}
        self.context = context

    def ref(self, local: str) -> str:
        return CS + local if self.full_iris else f"{self.cs}:{local}"

    def envelope(self, index: int) -> bytes:
        n = self.names
        doc: dict[str, Any] = {
            "@context": self.context,
            "@id": f"urn:uuid:{index:08x}-7e57-4000-8000-{self.number:012x}",
            "@type": f"{self.ioa}:SemanticProfile",
            n["ontologyId"]: "https://example.org/onto/agent-core",
            n["ontologyVersion"]: "1.0",
            n["capabilityRefs"]: [self.ref("TechTranslation")],
            n["intentRef"]: self.ref("TranslateTechDoc"),
            n["profileContext"]: {
                "@type": f"{self.ioa}:Context",
                n["domain"]: self.ref("ComputerScience"),
                n["termBindings"]: [{"@type": f"{self.ioa}:TermBinding", n["term"]: "LLM",
                                     n["sense"]: self.ref("LargeLanguageModel")}],
            },
        }
        if self.order is not None:
            doc = {key: doc[key] for key in self.order}
        text = json.dumps(doc, indent=self.indent, ensure_ascii=self.ascii)
        if self.slash:
            text = text.replace("/", "\\/")
        return text.encode()


def envelopes(size: int, senders: int | None, seed: int = SEED, start: int = 0) -> list[bytes]:
    """``size`` distinct envelopes from ``senders`` layouts (1: the example's; None: each its own)."""
    rng = _rng(seed, "envelopes", senders, start)
    cumulative = zipf_cumulative(senders) if senders and senders > 1 else []
    total = cumulative[-1] if cumulative else 0.0
    chosen: dict[int, EnvelopeSender] = {}
    out = []
    for index in range(start, start + size):
        if senders == 1:
            number = 0
        elif senders is None:
            number = 1_000_000 + index
        else:
            number = 1 + min(bisect.bisect(cumulative, rng.random() * total), senders - 1)
        who = chosen.get(number)
        if who is None:
            who = chosen[number] = EnvelopeSender(seed, number)
        out.append(who.envelope(index))
    return out


ENVELOPE_STREAMS = {
    "one layout": 1,
    "300 layouts": 300,
    "all-distinct layouts": None,
}


def context_key(doc: dict[str, Any]) -> str:
    """A context's identity, for counting the distinct ones."""
    return json.dumps(doc.get("@context"), sort_keys=False)


def layout_key(doc: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """A layout: the context as written and the member order."""
    return context_key(doc), tuple(doc)
