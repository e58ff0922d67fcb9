"""ioa-semantic: judge SemanticProfile envelopes of the Internet of Agents.

>>> from ioa_semantic import Checker
>>> checker = Checker("cs-translation")
>>> decision = checker.check(envelope_bytes)        # doctest: +SKIP
>>> decision.verdict                                # doctest: +SKIP
<Verdict.COMPATIBLE: 'compatible'>
"""

from ._runtime import paused as _paused

# The imports allocate what lives as long as the process: see _runtime.
with _paused():
    from ._build import build_kind
    from ._checker import Checker, check
    from ._exceptions import (
        ArtifactError,
        ConfigurationError,
        IoaSemanticError,
        ProfileError,
        RegistrationError,
        RetrievalError,
    )
    from ._findings import Decision, Finding, ProfileRef, Severity, Verdict
    from ._version import __version__
    from .compiled.engine import cache_bytes
    from .pipeline.expansion import ExpansionError, expand
    from .pipeline.intake import Limits

__all__ = [
    "ArtifactError",
    "Checker",
    "ConfigurationError",
    "Decision",
    "ExpansionError",
    "Finding",
    "IoaSemanticError",
    "Limits",
    "ProfileError",
    "ProfileRef",
    "RegistrationError",
    "RetrievalError",
    "Severity",
    "Verdict",
    "__version__",
    "build_kind",
    "cache_bytes",
    "check",
    "expand",
]
