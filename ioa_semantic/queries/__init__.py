"""Named SPARQL queries of the decision stage."""
