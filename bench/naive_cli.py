"""The naive command line, for comparison: one envelope through the stack one would write first.

stdlib json, a jsonschema validator, pyld expand and to_rdf, an rdflib graph and pyshacl
on the baseline shapes, then the reference decision (a fresh Oxigraph store and the named
SPARQL queries). Prints the verdict; used by bench_check.py to time a cold start.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime


def main(path: str, at: str) -> None:
    import pyshacl
    import rdflib
    from jsonschema import Draft202012Validator
    from pyld import jsonld

    from ioa_semantic import Checker
    from ioa_semantic import data as _resources

    data = open(path, "rb").read()  # noqa: SIM115
    document = json.loads(data)
    Draft202012Validator(_resources.read_json("shapes", "envelope.schema.json")).is_valid(document)
    nquads = jsonld.to_rdf(jsonld.expand(document, {"base": None}), {"format": "application/n-quads"})
    graph = rdflib.Graph().parse(data=nquads, format="nt")
    shapes = rdflib.Graph().parse(data=_resources.read_text("shapes", "baseline.ttl"), format="turtle")
    pyshacl.validate(graph, shacl_graph=shapes, inference="none")
    checker = Checker("cs-translation", engine="reference", cache_size=0)
    print(checker.check(data, at=datetime.fromisoformat(at.replace("Z", "+00:00"))).verdict.value)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
