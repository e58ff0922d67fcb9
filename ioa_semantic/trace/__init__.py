"""The trace audit (``ioa-check trace``): execution events folded into runs, held to what the
agents declared, and written into the oxp-ontology knowledge graph."""
