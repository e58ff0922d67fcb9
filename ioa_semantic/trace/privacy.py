"""What a trace audit may disclose: digests in place of free text, keyed references in place
of identities.

Traces carry prompts, tool arguments and model outputs. The audit needs none of them to judge
what an agent used, so the first stage keeps only a SHA-256 digest and a character count of
each (:func:`digest`); the text itself is kept only when content was asked for. Agent, run and
call identifiers appear in reports and in the emitted graph through a :class:`Disclosure`,
which either shows them or replaces them by keyed opaque references (HMAC-SHA256): the same
identifier under the same key always gives the same reference, so reports stay joinable
without naming anyone. Call identifiers are covered too, because runtimes build them from
agent names (``moderator-u1-exec``). A private trace store writes through :class:`Private`,
under a key of its own: everything that identifies a run, a person or a machine keyed, the
names the declarations publish as they are.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from typing import Any
from urllib.parse import quote

from mypy_extensions import mypyc_attr

from .calls import Digest, id_key

# The mas-lab convention for the tool an agent calls to delegate to another.
DELEGATION_PREFIX = "delegate_to_"

# Nodes of the emitted graph are named under this URN namespace; each name part is
# percent-encoded, so any identifier gives a valid IRI.
IRI_BASE = "urn:ioa-trace:"


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8, a lone surrogate included: a file name that is not UTF-8 reaches
    Python as one (``surrogateescape``), and a run named after its input's path must still
    have a node and a reference. ``surrogatepass`` is one-to-one, so distinct names stay
    distinct."""
    return text.encode("utf-8", "surrogatepass")


def literal_text(text: str) -> str:
    """``text`` as an RDF literal can hold it: a lone surrogate (a byte of a file name that
    is not UTF-8) written as its escape (``\\udcff``), as the reports write it; other text as
    it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


# What percent-encoding leaves as it is (RFC 3986's unreserved characters): most names, and
# every keyed reference, are only these, and are their own part of an IRI.
_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]*").fullmatch


def iri_part(name: str) -> str:
    """``name`` percent-encoded as one part of a node's IRI (lone surrogates included)."""
    if _UNRESERVED(name):
        return name  # what quote() would give, without its work (a call's node is made often)
    return quote(_utf8(name), safe="")


# What json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False) makes
# for each call (an encoder with these options), made once: a long run digests a payload an
# event.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_text(value: Any) -> str:
    """A piece of content as its digest is made of: text as it is, anything else as
    canonical JSON (members sorted, no spaces, characters as they are)."""
    return value if isinstance(value, str) else _CANONICAL.encode(value)


def digest(value: Any) -> Digest:
    """The :class:`Digest` of a piece of content: :func:`content_text` as UTF-8."""
    text = content_text(value)
    return Digest.of_hash(hashlib.sha256(_utf8(text)).digest(), len(text))


# The references :class:`Disclosure` keeps made (a keyed reference costs an HMAC, about a
# microsecond).
_REF_CACHE = 16384


# A store's Pseudonymous (trace/store.py, interpreted) is a Disclosure.
@mypyc_attr(allow_interpreted_subclasses=True)
class Disclosure:
    """How identities appear in what the audit writes.

    ``key`` None shows identifiers as the trace has them; a key replaces agent, run and call
    identifiers by ``agent-…``, ``run-…`` and ``call-…`` references keyed with it.
    """

    def __init__(self, key: bytes | None = None, include_content: bool = False) -> None:
        self.key = key
        self.include_content = include_content
        self._cache: dict[tuple[str, str], str] = {}

    @classmethod
    def opaque(cls, key: bytes | None, include_content: bool = False) -> Disclosure:
        # Without a key of the user's, references hold within one invocation only.
        return cls(key if key else os.urandom(32), include_content)

    @property
    def is_opaque(self) -> bool:
        return self.key is not None

    def _ref(self, kind: str, value: str) -> str:
        if self.key is None:
            return value
        cached = self._cache.get((kind, value))
        if cached is None:
            if len(self._cache) >= _REF_CACHE:
                # Agents, tools and runs are few and asked for often; calls and digests are
                # many, each asked for a few times near one another: a cache as large as a
                # long run's calls would hold a few hundred bytes a call to the end.
                self._cache.clear()
            mac = hmac.new(self.key, _utf8(f"{kind}\0{value}"), hashlib.sha256).hexdigest()
            cached = self._cache[(kind, value)] = f"{kind}-{mac[:20]}"
        return cached

    def agent(self, agent_id: str) -> str:
        return self._ref("agent", agent_id)

    def run(self, run_id: str) -> str:
        return self._ref("run", run_id)

    def call(self, call_id: str) -> str:
        return self._ref("call", call_id)

    def call_name(self, call_id: str, key: str) -> str:
        """A call as reports and its node's ``mas:id`` name it: its id as the trace gives it
        (its key without one); keyed, the reference of its key, its node's own: ids may be
        shared (a call started again) or spell another call's key (``a~`` is keyed ``a~~``,
        see :func:`~.calls.id_key`), and a reference names one call only."""
        if self.key is None:
            return call_id or key
        return self.call(key)

    def parent_name(self, parent_id: str, parent_key: str | None) -> str:
        """The parent a call's events name (``parentSpanId``), as :meth:`call_name` names the
        call that is its parent (``parent_key``; None for a parent outside the trace)."""
        if self.key is None:
            return parent_id
        return self.call(parent_key if parent_key is not None else id_key(parent_id))

    def path(self, path: str) -> str:
        """A file path of an input or a declaration: file names often name agents or runs.

        Withheld as ``file-…``; a ``#fragment`` after it is kept (its agent names are worded
        through :meth:`agent` by whoever built it).
        """
        if self.key is None:
            return path
        head, sep, fragment = path.partition("#")
        return self._ref("file", head) + sep + fragment

    def mas(self, name: str) -> str:
        """A MAS's name: often the id of the agent that runs it (mas-lab's root call)."""
        return self._ref("mas", name)

    def tool(self, name: str) -> str:
        """A tool name as written, except a delegation tool names its agent through :meth:`agent`."""
        if self.key is not None and name.startswith(DELEGATION_PREFIX):
            return DELEGATION_PREFIX + self.agent(name[len(DELEGATION_PREFIX):])
        return name

    # --- names in the graph and in reasons -------------------------------------------------

    def run_iri(self, run: str) -> str:
        return f"{IRI_BASE}run:{iri_part(self.run(run))}"

    def call_iri(self, run: str, call: str) -> str:
        return f"{self.run_iri(run)}:call:{iri_part(self.call(call))}"

    def agent_iri(self, agent: str) -> str:
        return f"{IRI_BASE}agent:{iri_part(self.agent(agent))}"

    def type_iri(self, kind: str, name: str) -> str:
        """A structural type that is not an agent: ``tool``, ``llm``, ``processing`` or ``mas``."""
        shown = self.tool(name) if kind == "tool" else self.mas(name) if kind == "mas" else name
        return f"{IRI_BASE}{kind}:{iri_part(shown)}"


class Private(Disclosure):
    """The disclosure of a private trace store: a keyed reference, under the store's own key,
    for everything that identifies a run, a person or a machine; the names the declarations
    publish as they are.

    Keyed: run, session and trace ids, call and span ids, file paths (:meth:`path`), response
    ids (:meth:`response`), digests of free text (:meth:`text`), consumer keys
    (:meth:`consumer`), and every agent or MAS name that ``agents`` and ``systems`` (the
    names the declarations given publish) do not hold: an agent only the trace names may be
    named after a person or an instance (the name an OTLP model or tool span gives its
    agent beside the agent's span too, and a span's ``gen_ai.agent.id``, always: see
    :func:`~.store._private_call`). Tool and model names stay, declared or not: they
    are what the audit judges (the canonical trace ontology keeps a durable tool call's
    ``tool_name`` too), except the agent a ``delegate_to_<agent>`` tool names.
    """

    def __init__(self, key: bytes, agents: frozenset[str] = frozenset(),
                 systems: frozenset[str] = frozenset()) -> None:
        super().__init__(key)
        self.agents = agents
        self.systems = systems

    def keyed(self, kind: str, value: str) -> str:
        """``value``'s reference of ``kind`` whatever the declarations publish (a reaudit
        maps the references of names published since back to the names)."""
        return self._ref(kind, value)

    def agent(self, agent_id: str) -> str:
        return agent_id if agent_id in self.agents else self._ref("agent", agent_id)

    def mas(self, name: str) -> str:
        # mas-lab names a MAS after its root agent when run_info.json is absent.
        return name if name in self.systems or name in self.agents else self._ref("mas", name)

    def response(self, response_id: str) -> str:
        """A provider's response id: it joins the call to the provider's logs."""
        return self._ref("response", response_id)

    def text(self, sha256: str) -> str:
        """A digest of free text, keyed: a plain SHA-256 of a short prompt can be confirmed
        by anyone who guesses the prompt."""
        return self._ref("text", sha256)

    def consumer(self, name: str) -> str:
        """A cursor's consumer key (the canonical trace ontology: "the consumer key is an
        opaque reference"); a team or a host often names it."""
        return self._ref("consumer", name)
