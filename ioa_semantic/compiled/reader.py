"""The compiled engine's reader: orjson, with a proof that the text was strict JSON.

orjson is RFC 8259 strict in everything the intake stage checks but one (it keeps the last
of repeated member names), so a document it reads counts only with the proof of
:func:`read_unproven`; whatever fails the proof goes to :func:`ioa_semantic.pipeline.intake.parse`.
"""

from typing import Any

from .._runtime import orjson_module
from ..pipeline.intake import Limits


def read_unproven(data: bytes | str, limits: Limits) -> tuple[Any, int] | None:
    """A document read quickly but not yet proven strict, with the colons of its text.

    orjson is RFC 8259 strict in everything :func:`parse` checks but one: it keeps the last
    of repeated member names without a word. The caller proves there were none by accounting
    for every colon of the text: in JSON without a ``\\u003a`` escape, each colon either
    separates a member from its name or sits inside a string, so the text has as many colons
    as the parsed document has members plus colons in its strings (:func:`colons_in`), and
    fewer members means a name was repeated. None means only :func:`parse` may read it (too
    large, possibly too deep, or anything orjson refuses), and the caller must fall back.
    """
    if isinstance(data, str):
        try:
            data = data.encode("utf-8")
        except UnicodeEncodeError:
            return None
    if (len(data) > limits.max_bytes
            or data.count(b"{") + data.count(b"[") > limits.max_depth
            or escapes_a_colon(data)):
        return None
    # Imported on first use (see _runtime), not with the module.
    orjson = orjson_module()
    try:
        return orjson.loads(data), data.count(b":")
    except orjson.JSONDecodeError:
        return None


def escapes_a_colon(data: bytes) -> bool:
    """Whether the text spells a colon as ``\\u003a``, which no colon count would see."""
    return b"\\" in data and (b"\\u003a" in data or b"\\u003A" in data)


def colons_in(value: Any) -> int:
    """Members plus colons in strings (names included) of a parsed value: see read_unproven."""
    if isinstance(value, str):
        return value.count(":")
    total = 0
    # Strings are counted in place (no call for each): a new sender's context is counted
    # once, and most of its members are strings.
    if isinstance(value, dict):
        total = len(value)
        for key, member in value.items():
            total += key.count(":") if isinstance(key, str) else colons_in(key)
            total += member.count(":") if isinstance(member, str) else colons_in(member)
    elif isinstance(value, list):
        for item in value:
            total += item.count(":") if isinstance(item, str) else colons_in(item)
    return total
