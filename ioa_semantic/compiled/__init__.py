"""The compiled engine: the reference pipeline's answers for the documents senders write,
from forms compiled once (active contexts, conformance functions, tables).

It imports the pipeline and is never imported by it. Each of its answers is the reference's
(the differential tests hold it so); a document it cannot show clean it declines, and the
pipeline reports every reason.
"""
