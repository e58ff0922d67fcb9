"""Quads as N-Quads text, the form a trace store is written in.

A run's graph is spelled as N-Quads lines while it is built (graph.quad_chunks) and handed to
Oxigraph's parsers whole (``Store.load``, ``Store.bulk_load``): a Python object for every
term and every quad, made only to be taken apart again in Rust, was most of the cost of
storing a long run (docs/performance.md, "The trace audit at scale"). The text is made only
from terms Oxigraph made or checked (:func:`iri`) and literals escaped as the N-Triples
grammar asks (:func:`string`), so it parses back to the quads it spells (held so by
tests/test_trace_nquads.py against pyoxigraph's own terms).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyoxigraph as ox

XSD = "http://www.w3.org/2001/XMLSchema#"


def iri(value: str) -> str:
    """``value`` as an N-Quads IRI term, checked as Oxigraph checks a ``NamedNode`` (a
    ``ValueError`` for what is no IRI)."""
    return str(ox.NamedNode(value))


def string(text: str) -> str:
    """``text`` as an N-Quads string literal: the four characters the grammar refuses raw
    (quotation mark, backslash, line feed, carriage return) escaped, the rest as it is."""
    if '"' in text or "\\" in text or "\n" in text or "\r" in text:
        text = (text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
                .replace("\r", "\\r"))
    return f'"{text}"'


def typed(lexical: str, datatype: str) -> str:
    """A literal of the XSD ``datatype`` (a local name) whose lexical form needs no escape
    (numbers, booleans)."""
    return f'"{lexical}"^^<{XSD}{datatype}>'


class Chunk:
    """Some quads as N-Quads text (UTF-8) and how many they are: what a store's writes take.
    Iterating parses them back (a server's update is spelled from them; tests compare)."""

    __slots__ = ("count", "data")

    def __init__(self, data: bytes, count: int) -> None:
        self.data = data
        self.count = count

    @classmethod
    def of(cls, quads: Iterable[ox.Quad]) -> Chunk:
        """Quads made as pyoxigraph terms (a verdict, a store's marks)."""
        lines = [f"{quad} .\n" for quad in quads]
        return cls("".join(lines).encode(), len(lines))

    @classmethod
    def lines(cls, lines: list[str]) -> Chunk:
        """Lines this module's functions spelled, each ending in ``" .\\n"``."""
        return cls("".join(lines).encode(), len(lines))

    def __add__(self, other: Chunk) -> Chunk:
        return Chunk(self.data + other.data, self.count + other.count)

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[ox.Quad]:
        return iter(ox.parse(self.data, format=ox.RdfFormat.N_QUADS))

    def __repr__(self) -> str:
        return f"<Chunk of {self.count} quads>"
