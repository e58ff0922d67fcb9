"""The vocabularies the checker reads, each namespace spelled once.

``IOA`` is the draft's baseline vocabulary (its 6.1 context maps ``ioa:``); ``IOP`` the
project's profile settings; ``IOASH`` the shapes' annotations; the rest are W3C's.
"""

IOA = "https://example.org/ioa/semantic#"
IOP = "https://ioa-semantic.org/ns/profile#"
IOASH = "https://ioa-semantic.org/ns/shapes#"
IOAA = "https://ioa-semantic.org/ns/alignment#"
# The task parameters as the profile's shapes see them: one node, a property per parameter.
IOPARAM = "https://ioa-semantic.org/ns/parameter#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDF_TYPE = RDF + "type"
RDF_LANGSTRING = RDF + "langString"
RDF_JSON = RDF + "JSON"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
RDFS_LABEL = RDFS + "label"
SH = "http://www.w3.org/ns/shacl#"
XSD = "http://www.w3.org/2001/XMLSchema#"
