"""One exception tree: every exception the package defines for its callers is rooted at
IoaSemanticError (issue: one seam, "values and errors without one root")."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import ioa_semantic
from ioa_semantic import IoaSemanticError


def test_every_public_exception_of_the_package_is_an_ioa_semantic_error() -> None:
    outside = []
    for module_info in pkgutil.walk_packages(ioa_semantic.__path__, "ioa_semantic."):
        if module_info.name in ("ioa_semantic.a2a", "ioa_semantic.audit.dask",
                                "ioa_semantic.__main__"):
            continue  # optional extras (a2a-sdk, Dask) define none and need their packages
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, BaseException)
                    and value.__module__ == module.__name__ and not name.startswith("_")
                    and not issubclass(value, IoaSemanticError)):
                outside.append(f"{module.__name__}.{name}")
    # Private ones (a non-finite number inside the JSON parser's hook, an address refused
    # inside the transport) are caught where they are raised and never reach a caller.
    assert outside == []
