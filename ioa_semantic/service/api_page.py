"""The interactive API page (``GET /docs``): Swagger UI on the service's OpenAPI document.

Swagger UI's files come from the ``swagger-ui-py`` package (the serve extra), and the
service serves them itself, beside the page: the page fetches nothing from elsewhere, which
its Content Security Policy holds it to. The package is found without being imported (its
module imports a template engine and YAML the service does not need); where it is not
installed, ``/docs`` answers 404 and says what to install.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .. import data as _resources

# The files of Swagger UI the page links (the whole UI is in its bundle), and their types.
VENDOR_ASSETS = {"swagger-ui.css": "text/css; charset=utf-8",
                 "swagger-ui-bundle.js": "text/javascript; charset=utf-8"}
# The page's own script, shipped with the package.
OWN_ASSETS = {"api.js": "text/javascript; charset=utf-8"}
ASSETS = {**VENDOR_ASSETS, **OWN_ASSETS}
MISSING = "the API page needs the swagger-ui-py package: pip install 'ioa-semantic[serve]'"
# This server only. Swagger UI sets style attributes from its script ('unsafe-inline' for
# styles: they cannot fetch), and its icons are data: images.
POLICY = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
          "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; "
          "form-action 'none'; base-uri 'none'; frame-ancestors 'none'")


def vendor_folder() -> Path | None:
    """The folder of Swagger UI's files in the installed swagger-ui-py, or None."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "static"
    return folder if all((folder / name).is_file() for name in VENDOR_ASSETS) else None


class ApiPage:
    """The page and its assets, read once, on first request."""

    def __init__(self) -> None:
        self.folder = vendor_folder()
        self.html = _resources.read_bytes("web", "api.html")
        self._read: dict[str, bytes] = {}

    @property
    def available(self) -> bool:
        return self.folder is not None

    def asset(self, name: str) -> tuple[bytes, str] | None:
        """An asset's bytes and media type; None for a name the page does not link."""
        if name not in ASSETS or self.folder is None:
            return None
        if name not in self._read:
            self._read[name] = (_resources.read_bytes("web", name) if name in OWN_ASSETS
                                else (self.folder / name).read_bytes())
        return self._read[name], ASSETS[name]
