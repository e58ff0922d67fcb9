"""Reporters render decisions and audits (text, JSON, SARIF); they return nothing.

Every JSON line they write is UTF-8 JSON: :func:`json_text` is the one way they write it.
"""

import json
import re
from typing import Any

# A lone surrogate is what Python makes of a byte that is not UTF-8 in a file name (PEP 383,
# "surrogateescape"); written raw it would be that byte, and the line would not be UTF-8.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(value: Any, **options: Any) -> str:
    """``value`` as JSON text that is UTF-8 whatever it holds: text as it is, but a lone
    surrogate (an undecodable byte ``b`` of a file name, as ``\\udcXX``) written as its JSON
    escape, which ``json.loads`` reads back to the same string (and ``os.fsencode`` to the
    same bytes). docs/architecture.md, "Output"."""
    text = json.dumps(value, ensure_ascii=False, **options)
    if _LONE_SURROGATE.search(text) is None:
        return text
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
