"""The validation service (contract 7): checks and audits over HTTP, and a page for people.

Needs the optional extra: ``pip install 'ioa-semantic[serve]'`` (Starlette and uvicorn).
``ioa-check serve`` builds one :class:`~ioa_semantic.Checker` and serves it with
:func:`create_app` (in :mod:`.app`); the service only carries requests to the Checker and
its answers back, and judges nothing itself. How an answer is written (the JSON reporters)
and how a query value is read (the command line's own parsers) are handed to it as a
:class:`Wire`, so that the service says exactly what ``ioa-check --format json`` says and
refuses exactly what ``--param`` and ``--at`` refuse.

The names below are loaded on first use: the command line reads :mod:`.limits` (for its
options' defaults) without importing Starlette.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ServiceLimits", "Wire", "create_app"]


def __getattr__(name: str) -> Any:
    if name == "ServiceLimits":
        from .limits import ServiceLimits

        return ServiceLimits
    if name in ("Wire", "create_app"):
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
