"""ioa-semantic: judge SemanticProfile envelopes of the Internet of Agents.

>>> from ioa_semantic import Checker
>>> checker = Checker("cs-translation")
>>> decision = checker.check(envelope_bytes)        # doctest: +SKIP
>>> decision.verdict                                # doctest: +SKIP
<Verdict.COMPATIBLE: 'compatible'>
"""

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:  # what each name below is, for type checkers and the API reference
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

# The module of each name of :data:`__all__`, imported when the name is first asked for, not
# with the package: the command line imports the Checker only for a command that builds one
# (``ioa-check keygen`` never does), and a check imports it with its command's module, in
# a process of its own whose collector then leaves it alone (cli.main.command_module,
# _runtime.paused).
_MODULES = {
    "build_kind": "_build",
    "Checker": "_checker",
    "check": "_checker",
    **dict.fromkeys(("ArtifactError", "ConfigurationError", "IoaSemanticError", "ProfileError",
                     "RegistrationError", "RetrievalError"), "_exceptions"),
    **dict.fromkeys(("Decision", "Finding", "ProfileRef", "Severity", "Verdict"), "_findings"),
    "cache_bytes": "compiled.engine",
    "ExpansionError": "pipeline.expansion",
    "expand": "pipeline.expansion",
    "Limits": "pipeline.intake",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    from ._runtime import paused

    # The imports allocate what lives as long as the process: see _runtime.
    with paused():
        value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # asked once: the next lookup finds it as any attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
