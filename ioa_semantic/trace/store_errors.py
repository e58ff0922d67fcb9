"""What keeps a trace store from being used: its own errors, apart so that the store's
backends (:mod:`.store`, the SPARQL client of :mod:`.remote`) share them without importing
each other."""

from __future__ import annotations

from .._exceptions import ConfigurationError, EnvironmentFailure


class StoreError(ConfigurationError):
    """The store cannot be used as asked: not a trace store, another mode, a rewritten input
    (exit status 2)."""


class RunsNarrowed(StoreError):
    """Runs not recorded because each would replace a stored run and lose some of its calls
    (``runs``: their names); the others were recorded. Under ``--complete-only`` (a live
    feed) they are spans that came after their run was judged and its spans had left the
    spool: told, not an error."""

    def __init__(self, message: str, runs: list[str]) -> None:
        super().__init__(message)
        self.runs = runs


class StoreUnavailable(EnvironmentFailure):
    """The store cannot be opened or written: another process holds it, the folder is not
    writable, the disk is full (exit status 74, the environment's)."""


class StoreKeyError(StoreError):
    """A private store's key file is missing, replaced, truncated, a link, or readable by
    others (exit status 2: the store cannot be used until its own key is back)."""


class QueryRefused(StoreUnavailable):
    """The server refused a query as malformed (HTTP 400): the store's failing when the
    query is the store's own (exit status 74); the user's own query is told it is not SPARQL
    where it is asked (:meth:`~.store.RemoteTraceStore.query`)."""
