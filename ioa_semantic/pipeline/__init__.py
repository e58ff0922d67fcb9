"""The reference pipeline: the meaning of a check, one stage after another.

intake (bytes to JSON) → contexts (the sender's context held to the baseline) → expansion
(JSON-LD, pyld) → shapes (JSON Schema and SHACL) → baseline (those four for one document) →
store (the envelope and the receiver's quads in Oxigraph, named SPARQL queries) → decision
(the three-valued combination) → engine (the stages for a Checker). Each module imports only
the stages before it; nothing here imports the compiled engine.
"""
