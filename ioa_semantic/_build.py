"""Which build of the package answers: the hot modules compiled by mypyc, or pure Python.

``pip install .`` compiles the modules named in :data:`COMPILED_MODULES` with mypyc where a C
compiler exists (``build_backend/backend.py`` decides, and reads this list from this file);
the same source is the pure package everywhere else. Both builds must answer alike (CI runs
the conformance cases, the equivalence tests and the differential fuzzer on each), so nothing
in the package asks which build it is, except to say so: ``ioa-check --version`` and the
tests that hold a build to what it claims to be.

This module imports nothing of the package, and the build backend runs it by path: it names
the modules without importing them.
"""

from typing import Literal

# The modules mypyc compiles: the compiled engine's walk, tables and shapes, the IRI checks,
# the memo, the intake, the reporting path of a document the compiled walk cannot show clean
# (the reference baseline, its expansion's checks, the shapes' evaluation, the remedies), the
# Checker (the instance content's canonical text, the decision's record), the audit's
# per-registration path, the trace audit's reading (the fold of each event or span, the run
# built from it, its judging) and the graph of a run a trace store is given (its quads spelled
# as N-Quads). What each buys is measured in
# docs/performance.md ("Compiled with mypyc", "The trace audit compiled").
# Not audit.inputs: its generators hold files open, and a generator mypyc compiles is not
# closed when dropped (no `with` exits), so an audit that stops early would leak the file.
# pipeline.engine with compiled.engine: CompiledEngine subclasses ReferenceEngine, and with
# the base left interpreted mypyc's class of it was not the one its instances have
# ("CompiledEngine object expected; got CompiledEngine" where the audit's kinds are made).
# Not trace.calls (Digest and Call subclass bytes and tuple, which mypyc does not compile),
# trace.folded (its members are descriptors of its own) nor trace.attribution (mypyc 2.4
# stops with an internal error on its unpacking of a tuple of Any).
COMPILED_MODULES = (
    "ioa_semantic._checker",
    "ioa_semantic._findings",
    "ioa_semantic._iri",
    "ioa_semantic._memo",
    "ioa_semantic.pipeline.intake",
    "ioa_semantic.pipeline.baseline",
    "ioa_semantic.pipeline.expansion",
    "ioa_semantic.pipeline.shapes",
    "ioa_semantic.pipeline.remedies",
    "ioa_semantic.pipeline.contexts",
    "ioa_semantic.pipeline.engine",
    "ioa_semantic.pipeline.decision",
    "ioa_semantic.compiled.conformance",
    "ioa_semantic.compiled.constraints",
    "ioa_semantic.compiled.decision",
    "ioa_semantic.compiled.engine",
    "ioa_semantic.compiled.reader",
    "ioa_semantic.compiled.tables",
    "ioa_semantic.compiled.walk",
    "ioa_semantic.audit.conflicts",
    "ioa_semantic.audit.judge",
    "ioa_semantic.audit.kinds",
    "ioa_semantic.audit.places",
    "ioa_semantic.trace.events",
    "ioa_semantic.trace.instants",
    "ioa_semantic.trace.privacy",
    "ioa_semantic.trace.nesting",
    "ioa_semantic.trace.state",
    "ioa_semantic.trace.formats",
    "ioa_semantic.trace.otlp",
    "ioa_semantic.trace.maslab_otel",
    "ioa_semantic.trace.conventions",
    "ioa_semantic.trace.audit",
    "ioa_semantic.trace.graph",
    "ioa_semantic.trace.nquads",
)


def build_kind() -> Literal["compiled", "pure", "mixed"]:
    """``"compiled"`` when every module of :data:`COMPILED_MODULES` is a native extension,
    ``"pure"`` when none is, ``"mixed"`` otherwise (never made by the build backend: a stale
    extension left beside the source, say). Found without importing the modules."""
    # Asked by --version and the tests only: not imported with the package.
    from importlib.machinery import ExtensionFileLoader
    from importlib.util import find_spec

    native = 0
    for name in COMPILED_MODULES:
        spec = find_spec(name)
        native += spec is not None and isinstance(spec.loader, ExtensionFileLoader)
    if native == len(COMPILED_MODULES):
        return "compiled"
    return "pure" if native == 0 else "mixed"
