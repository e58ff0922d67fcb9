"""The registry of every reason code the checker can emit.

Each code belongs to one of the contract's families (the first dotted segment), forces one
verdict when it is an error (``None``: it never decides), and rests on one draft section.
Checking code builds findings only through :func:`finding`, so an unregistered code is a bug
that fails loudly in the tests rather than a silent new output.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

from typing import NamedTuple

from ._findings import Finding, Severity, Verdict

# Where the documentation site is published (mkdocs.yml's site_url): a SARIF report's rules
# link to their code's entry on its reason codes page (``--docs-url`` for another).
DOCS_URL = "https://ioa-semantic.readthedocs.io/en/latest/"

FAMILIES = (
    "json",
    "jsonld",
    "envelope",
    "registration",
    "profile",
    "domain",
    "intent",
    "capability",
    "alignment",
    "retrieval",
    "constraint",
    # Execution traces (ioa-check trace): the trace's own well-formedness, which no family of
    # the contract covers (an envelope or registration family would misname the input).
    "trace",
)

INVALID = Verdict.INVALID
INCOMPATIBLE = Verdict.INCOMPATIBLE
INDETERMINATE = Verdict.INDETERMINATE


class Code(NamedTuple):
    code: str
    effect: Verdict | None
    section: str
    meaning: str

    @property
    def family(self) -> str:
        return self.code.partition(".")[0]


_TABLE: tuple[tuple[str, Verdict | None, str, str], ...] = (
    # json.: bytes to JSON
    ("json.unreadable", INVALID, "5.4", "the input could not be read"),
    ("json.too-large", INVALID, "6.1", "the input exceeds the size limit"),
    ("json.too-deep", INVALID, "6.1", "the input nests deeper than the depth limit"),
    ("json.too-many-values", INVALID, "6.1",
     "the input holds more JSON values (members and array items) than the limit"),
    ("json.encoding", INVALID, "5.4", "the input is not UTF-8"),
    ("json.syntax", INVALID, "5.4", "the input is not JSON"),
    ("json.duplicate-key", INVALID, "6.4", "an object repeats a member name"),
    ("json.non-finite", INVALID, "5.4", "NaN or Infinity, which JSON does not have"),
    ("json.not-object", INVALID, "6.2", "the document is not one JSON object"),
    # jsonld.: contexts and expansion
    ("jsonld.context-invalid", INVALID, "6.1", "an @context value that is not a context"),
    ("jsonld.too-many-contexts", INVALID, "6.1", "more context objects than the limit"),
    ("jsonld.too-many-terms", INVALID, "6.1", "more term definitions than the limit"),
    ("jsonld.term-iri-too-long", INVALID, "6.1",
     "a term whose IRI, expanded through the context's other terms, is longer than the limit"),
    ("jsonld.context-keyword", INVALID, "6.1",
     "a context keyword the profile does not allow (@vocab, @base, @language, ...)"),
    ("jsonld.term-redefinition", INVALID, "6.1",
     "a baseline term or prefix defined differently from the 6.1 context"),
    ("jsonld.protected-redefinition", INVALID, "6.1", "a protected term redefined"),
    ("jsonld.keyword-alias", INVALID, "6.1", "a term aliasing a keyword such as @id or @type"),
    ("jsonld.term-definition", INVALID, "6.1",
     "a term definition using a feature the baseline does not use"),
    ("jsonld.expansion-error", INVALID, "6.1", "JSON-LD expansion failed"),
    ("jsonld.dropped-term", INVALID, "6.1", "a member that expansion would drop silently"),
    ("jsonld.ignored-term", None, "6.1",
     "a descriptive member the profile lets the receiver ignore"),
    ("jsonld.relative-iri", INVALID, "6.1", "a reference that does not expand to an absolute IRI"),
    ("jsonld.invalid-iri", INVALID, "6.1",
     "a string used as an IRI that RFC 3987 does not call one (a space, an excluded character, "
     "a bad percent-escape, a second '#')"),
    ("jsonld.blank-node-id", INVALID, "6.1",
     "an envelope's or a registration's @id that is a blank node identifier, not an IRI"),
    ("jsonld.misplaced-keyword", INVALID, "6.1",
     "a JSON-LD keyword where the baseline gives it no meaning (@version in a node, say)"),
    ("jsonld.scheme-not-allowed", INVALID, "6.1",
     "a reference whose IRI scheme the profile does not allow"),
    ("jsonld.node-structure", INVALID, "6.2",
     "not exactly one top-level node (@graph, @included, @reverse or several nodes)"),
    ("jsonld.shared-node-id", INVALID, "6.2",
     "two node objects share one @id, which JSON-LD merges into one node"),
    # envelope.: baseline fields of a task envelope
    ("envelope.missing", INVALID, "6.2", "a required field is missing"),
    ("envelope.cardinality", INVALID, "6.2", "a field has more values than allowed"),
    ("envelope.type", INVALID, "6.2", "a field has the wrong type"),
    ("envelope.empty", INVALID, "6.2", "a string field is empty or blank"),
    ("envelope.rdf-type", INVALID, "6.2", "@type lacks the required class"),
    ("envelope.type-not-permitted", INVALID, "6.2", "@type holds a class the profile does not permit"),
    ("envelope.unknown-property", INVALID, "6.1", "a property outside the baseline vocabulary"),
    ("envelope.legacy-key", INVALID, "6.5", "the legacy id/type spelling in place of @id/@type"),
    ("envelope.language-tag", INVALID, "5.2", "a language value that is not a language tag"),
    ("envelope.media-type", INVALID, "5.2", "a media type that is not type/subtype"),
    ("envelope.ambiguous-binding", INVALID, "6.4", "one term bound to several senses"),
    # registration.: capability registrations
    ("registration.missing", INVALID, "6.3", "a required field is missing"),
    ("registration.parameter-type", INVALID, "6.4",
     "a value of a parameter the profile declares is not of its datatype (an audit)"),
    ("registration.unit-conflict", INVALID, "6.4",
     "a value of a parameter the profile declares is stated in another unit than the "
     "profile's (an audit; 12.5 S3: never converted)"),
    ("registration.cardinality", INVALID, "6.3", "a field has more values than allowed"),
    ("registration.type", INVALID, "6.3", "a field has the wrong type"),
    ("registration.empty", INVALID, "6.3", "a string field is empty or blank"),
    ("registration.rdf-type", INVALID, "6.3", "@type lacks ioa:Capability"),
    ("registration.type-not-permitted", INVALID, "6.3",
     "@type holds a class the profile does not permit"),
    ("registration.unknown-property", INVALID, "6.3", "a property outside the baseline vocabulary"),
    ("registration.legacy-key", INVALID, "6.5", "the legacy id/type spelling in place of @id/@type"),
    ("registration.language-tag", INVALID, "5.2", "a language value that is not a language tag"),
    ("registration.media-type", INVALID, "6.3", "a media type that is not type/subtype"),
    ("registration.conflict", INVALID, "6.3",
     "the same capability IRI registered with different inputs, outputs or ontology"),
    # profile.: ontology and version acceptance
    ("profile.ontology-not-accepted", INDETERMINATE, "5.3", "the profile does not accept the ontology"),
    ("profile.version-not-accepted", INDETERMINATE, "5.3",
     "the profile does not accept the ontology version and defines no relationship to it"),
    ("profile.relationship-scope", INDETERMINATE, "5.3",
     "a declared version relationship does not cover this intent"),
    ("profile.version-relationship", None, "5.3", "the version was read through a declared relationship"),
    ("profile.revision-ambiguous", INDETERMINATE, "5.3",
     "an envelope instance (@id and profileVersion) seen before with another content: its "
     "revision is not unambiguous"),
    # domain.: domains and senses
    ("domain.binding-not-permitted", INCOMPATIBLE, "5.4",
     "a term binding's sense lies outside the profile's permitted domains"),
    ("domain.context-not-permitted", INCOMPATIBLE, "5.4",
     "the task context names a domain the profile does not permit"),
    ("domain.intent-not-permitted", INCOMPATIBLE, "5.4",
     "the intent applies only to domains the profile does not permit"),
    ("domain.unknown-sense", INDETERMINATE, "6.4", "a sense the vocabularies do not know"),
    # intent.: intents
    ("intent.unknown", INDETERMINATE, "5.4", "an intent the vocabularies do not know"),
    ("intent.not-applicable", INCOMPATIBLE, "5.4",
     "a capability the intent requires is not among capabilityRefs"),
    ("intent.domain-mismatch", INCOMPATIBLE, "5.4",
     "the intent does not apply to any domain of the task context"),
    # capability.: capabilities
    ("capability.unknown", INDETERMINATE, "5.4", "a capability the vocabularies do not know"),
    ("capability.input-conflict", INCOMPATIBLE, "7.1",
     "the provider's declared inputs exclude the task's input media type"),
    ("capability.output-conflict", INCOMPATIBLE, "7.1",
     "the provider's declared outputs exclude the task's output media type"),
    ("capability.language-conflict", INCOMPATIBLE, "7.1",
     "the provider's declared languages exclude the task's language"),
    ("capability.parameter-conflict", INCOMPATIBLE, "7.1",
     "the provider's constraint on a parameter the profile declares excludes the task's "
     "value, compared by the declaration's datatype and comparison"),
    ("capability.unit-conflict", INCOMPATIBLE, "6.4",
     "the provider states a parameter in another unit than the profile declares (12.5 S3: "
     "never converted)"),
    # capability.: an agent's observed uses against its declarations (ioa-check trace)
    ("capability.undeclared-tool", INCOMPATIBLE, "7.1",
     "an agent called a tool that its declarations do not list"),
    ("capability.undeclared-model", INCOMPATIBLE, "7.1",
     "an agent used a model that its manifest does not list"),
    ("capability.undeclared-delegation", INCOMPATIBLE, "7.1",
     "a delegation, or a call from the MAS, that the workflow does not declare"),
    ("capability.undeclared-agent", INCOMPATIBLE, "7.1",
     "an agent acted that the MAS manifest does not list"),
    ("capability.undeclared-capability", INCOMPATIBLE, "7.1",
     "a use bound to a capability IRI that the agent's bindings do not hold"),
    ("capability.model-unknown", INDETERMINATE, "7.1",
     "the trace records no model, or conflicting ones, for an LLM call"),
    ("capability.tool-unknown", INDETERMINATE, "7.1",
     "the trace records no tool name, or conflicting ones, for a tool call"),
    ("capability.caller-unknown", INDETERMINATE, "7.1",
     "the call that made a call, or the agent a call belongs to, is not in the trace"),
    ("capability.caller-ambiguous", INDETERMINATE, "7.1",
     "a model or tool call that no agent span above it owns, beside agent spans of several "
     "agents: whose call it is is not guessed"),
    ("capability.callee-unknown", INDETERMINATE, "7.1",
     "an agent sent an A2A request, and the trace holds no span of the agent that served it"),
    ("capability.unbound-name", INDETERMINATE, "6.4",
     "a tool or agent name that the bindings file does not bind to a capability IRI"),
    ("capability.ambiguous-binding", INDETERMINATE, "6.4",
     "a tool name bound to several capability IRIs"),
    ("capability.declaration-unavailable", INDETERMINATE, "7.1",
     "the declaration that would cover a use was not given or could not be read"),
    ("capability.unregistered", INDETERMINATE, "6.3",
     "a bound capability IRI that no valid registration declares"),
    ("capability.evidence-opaque", INDETERMINATE, "7.1",
     "the trace holds identities or payloads only as opaque references or digests"),
    ("capability.declared-unused", None, "7.1",
     "declared but not used in the trace: information, never a fault"),
    # alignment.: artifacts and mappings
    ("alignment.no-accepted-mapping", INDETERMINATE, "7.3",
     "no accepted mapping provides a requested capability"),
    ("alignment.ambiguous", INDETERMINATE, "7.3",
     "several distinct applicable artifacts and no selection rule singles one out"),
    ("alignment.condition-unevaluable", INDETERMINATE, "7.2",
     "a mapping condition cannot be evaluated against the task"),
    ("alignment.not-offered", INDETERMINATE, "7.2", "alignmentRef names an artifact not offered"),
    ("alignment.untrusted", None, "7.2", "an artifact excluded: issuer not trusted by the profile"),
    ("alignment.expired", None, "7.2", "an artifact excluded: expired at the evaluation instant"),
    ("alignment.not-yet-valid", None, "7.2",
     "an artifact excluded: its validFrom lies after the evaluation instant"),
    ("alignment.unknown-member", None, "7.2",
     "an artifact carries a member this checker does not define: reported, never used"),
    ("alignment.inapplicable", None, "7.3",
     "an artifact excluded: versions, capabilities, direction or conditions do not cover the task"),
    ("alignment.malformed", None, "7.2", "an artifact excluded: malformed"),
    ("alignment.pin-mismatch", None, "7.2",
     "an artifact excluded: its digest differs from the profile's pin"),
    ("alignment.not-referenced", None, "7.2",
     "an artifact excluded: the envelope's alignmentRef names another artifact"),
    # alignment.proof-*: the artifact's provenance (7.2, 12.4; contract 6): a Data Integrity
    # proof (eddsa-jcs-2022, did:key) required by the trust policy, or present and checked
    ("alignment.proof-missing", None, "7.2",
     "an artifact excluded: the profile requires its issuer's proof (a did:key issuer, or an "
     "issuer the profile binds to keys with a proof required) and it carries none"),
    ("alignment.proof-malformed", None, "7.2",
     "an artifact excluded: its proof is not well-formed (a member missing or not a string, a "
     "proofValue or did:key that does not decode, a date-time without an offset)"),
    ("alignment.proof-unsupported", None, "7.2",
     "an artifact excluded: its proof is of a type, cryptosuite, purpose or verification "
     "method this checker does not verify (it verifies DataIntegrityProof, eddsa-jcs-2022, "
     "assertionMethod, an Ed25519 did:key)"),
    ("alignment.proof-key-not-accepted", None, "7.2",
     "an artifact excluded: its proof is made by a verification method the profile does not "
     "accept for its issuer"),
    ("alignment.proof-invalid", None, "7.2",
     "an artifact excluded: its proof does not verify (the artifact or its proof changed after "
     "signing)"),
    ("alignment.proof-expired", None, "7.2",
     "an artifact excluded: its proof expires at or before the evaluation instant"),
    ("alignment.proof-not-yet-valid", None, "7.2",
     "an artifact excluded: its proof was created after the evaluation instant, so it is no "
     "evidence at that instant"),
    ("alignment.local-selection", None, "7.3",
     "the profile's selection rule chose one mapping; the peer's agreement is not established"),
    # retrieval.: remote resources
    ("retrieval.prohibited", INDETERMINATE, "6.1", "remote retrieval is not allowed by policy"),
    ("retrieval.origin-not-allowed", INDETERMINATE, "6.1",
     "the URL's origin (scheme, host, port) is not on the allow-list"),
    ("retrieval.private-address", INDETERMINATE, "6.1",
     "the host is, or resolves to, a loopback, private, link-local, multicast or reserved address"),
    ("retrieval.redirect-refused", INDETERMINATE, "6.1",
     "a redirect leads to an origin not on the allow-list"),
    ("retrieval.too-many-redirects", INDETERMINATE, "6.1",
     "the resource is behind more redirects than the policy allows"),
    ("retrieval.timeout", INDETERMINATE, "6.1",
     "the fetch did not complete within its time budget, or the check's retrieval deadline had passed"),
    ("retrieval.too-large", INDETERMINATE, "6.1", "the response body is larger than the byte budget"),
    ("retrieval.too-deep", INDETERMINATE, "6.1",
     "contexts name contexts deeper than the reference-depth budget"),
    ("retrieval.cycle", INDETERMINATE, "6.1",
     "a resource names itself, directly or through other resources"),
    ("retrieval.content-type", INDETERMINATE, "6.1",
     "the response is not of an accepted media type or content coding"),
    ("retrieval.pin-mismatch", INDETERMINATE, "6.1",
     "the body's sha256 differs from the digest the policy pins"),
    ("retrieval.http-status", INDETERMINATE, "6.1",
     "the server answered with a status other than 200 OK"),
    ("retrieval.failed", INDETERMINATE, "6.1",
     "the resource could not be fetched (connection, TLS, protocol) or is not one strict JSON "
     "object"),
    ("retrieval.budget", INDETERMINATE, "6.1", "the check names more resources than its fetch budget"),
    # constraint.: task parameters
    ("constraint.missing-parameter", INDETERMINATE, "5.4",
     "a task parameter the profile requires is not supplied"),
    ("constraint.parameter-conflict", INCOMPATIBLE, "5.4",
     "a task parameter conflicts with the profile's constraint"),
    ("constraint.parameter-type", INVALID, "6.4",
     "a task parameter's value is not of the datatype the profile declares for it"),
    ("constraint.unit-conflict", INCOMPATIBLE, "6.4",
     "a task parameter is stated in another unit than the profile declares (12.5 S3: never "
     "converted)"),
    ("constraint.shape-violated", INCOMPATIBLE, "5.4",
     "the envelope, its task parameters or a registration violate a SHACL shape of the "
     "profile (sh:Violation)"),
    ("constraint.shape-warning", None, "5.4",
     "a SHACL shape of the profile of severity sh:Warning or sh:Info is not met"),
    ("constraint.shape-unevaluable", INDETERMINATE, "5.4",
     "the profile's SHACL shapes could not be evaluated (an unsupported feature, a SPARQL "
     "error, an evaluation stopped at the time bound), so its required constraints are not "
     "known to hold"),
    # trace.: execution traces and their knowledge graph (ioa-check trace)
    ("trace.event-malformed", None, "5.4",
     "a trace line that is JSON but neither an event nor a trace outcome record, an OTLP "
     "span without valid ids, or a mas-lab span without ids that has no start or end time"),
    ("trace.attribute-malformed", None, "5.4",
     "an OTLP span attribute or member of the wrong type, or given twice, or a mas-lab event's "
     "timestamp that is not a number, or a call's end timestamp before its start's: it is not "
     "used"),
    ("trace.span-unmapped", None, "5.4",
     "an OTLP span carrying a tool or model name under an operation the mapping does not know, "
     "or named as a mas-lab call without any mas.* attribute: it is not used"),
    ("trace.span-name-unknown", None, "5.4",
     "a span with mas.* attributes whose name is missing, not a string, no mas-lab span name "
     "the table knows, or contradicted by its mas.boundary, or a mas-lab event of a kind the "
     "schema does not name that carries a tool_name or a model: it is not used"),
    ("trace.convention-mixed", None, "5.4",
     "a GenAI call span in a trace of mas-lab spans: both conventions may write one call, so "
     "it is not used"),
    ("trace.all-spans-unmapped", None, "5.4",
     "none of a trace's spans is a call the GenAI or the mas-lab mapping reads"),
    ("trace.parent-cycle", None, "5.4",
     "calls that are each other's ancestors: their parent links are not used"),
    ("trace.no-agents", None, "5.4",
     "an OpenTelemetry trace with no agent, model or tool call (a framework's build or setup "
     "steps): no agent acts in it, and nothing in it is judged"),
    ("trace.incomplete", INDETERMINATE, "7.1",
     "part of the trace could not be used, so an undeclared use may be missing from the evidence"),
    ("trace.call-incomplete", None, "5.4",
     "a call whose start or end event the trace lacks, or a parent a call names that the trace "
     "does not hold"),
    ("trace.memory-bound", INDETERMINATE, "7.1",
     "the run could not be judged within the invocation's --max-memory bound: none of it was "
     "judged or stored, rather than a verdict on part of it"),
    ("trace.call-conflict", None, "5.4",
     "a call started, ended or attributed more than once, inconsistently"),
    ("trace.nesting-ambiguous", INDETERMINATE, "7.1",
     "an agent call whose events name no parent and whose caller the order of events does "
     "not single out (several open calls could have made it, other agents were busy and none "
     "delegated to it, its start is missing, or it rests on interleaved events): who called "
     "it, and each candidate's delegation to it, are not established"),
    ("trace.nesting-interleaved", None, "5.4",
     "events without parents that do not nest as the schema's interval tree: an event of one "
     "agent while another's call is the innermost open one, an end while a call started "
     "inside it is still open, a delegation tool call its agent never started inside"),
    ("trace.run-malformed", None, "5.4",
     "a run folder's run.json that is not one JSON object, or a member of the wrong type: "
     "what is wrong is not used; or a run folder with events.jsonl beside "
     "traces/events.jsonl: only the latter is read"),
    ("trace.run-mismatch", None, "5.4",
     "a run folder's run.json whose run_id is not the events' run_id: it describes another "
     "run and is not used; or events whose run_id is not the first event's: another run's "
     "events in the stream, judged as this run's"),
    ("trace.shapes-not-run", None, "5.4",
     "the run's calls exceed what earlier runs left of the invocation's --max-shape-calls "
     "bound"),
    ("trace.shape", None, "5.4",
     "the trace's knowledge graph breaks a rule of the oxp-ontology SHACL shapes"),
)

CODES: dict[str, Code] = {row[0]: Code(*row) for row in _TABLE}

# What the person reading a reason can do about it, by code family and, where it says more,
# by code. Shown by the text reporter; never part of the decision.
FIXES: dict[str, str] = {
    "json": "send one UTF-8 JSON object without repeated member names, within the limits",
    "jsonld": "use the baseline 6.1 context: define only the terms you use, exactly as it does, "
              "and write every reference as an absolute IRI or a compact IRI with a defined prefix",
    "envelope": "correct the envelope field as draft 6.2 requires",
    "registration": "correct the registration as draft 6.3 requires",
    "profile": "send the envelope in an ontology version the receiver's profile accepts, or "
               "negotiate a profile that declares the relationship",
    "domain": "bind the term to a sense in a domain the profile permits, or negotiate a profile "
              "that permits the domain",
    "intent": "declare every capability the intent requires, or use an intent the profile knows",
    "capability": "use a capability the profile knows, or send a task the provider's declared "
                  "constraints admit",
    "alignment": "offer an accepted alignment artifact (trusted issuer, valid at the instant, "
                 "covering the exact versions and the task's parameters), or negotiate one mapping",
    "retrieval": "inline the context (the 6.1 baseline) or allow the origin explicitly",
    "constraint": "supply the task parameter with a value the profile allows (--param, or the "
                  "envelope's profileContext for the parameters it carries)",
    "json.unreadable": "check that the file exists and can be read (a relative path is read "
                       "from the current folder)",
    "json.too-large": "send a smaller document, or raise the limit (--max-bytes) if you trust it",
    "trace.memory-bound": "raise --max-memory if the machine has the memory, or split the run's "
                          "events into several runs",
    "json.too-deep": "flatten the document, or raise the limit (--max-depth) if you trust it",
    "json.too-many-values": "send a smaller document, or raise the limit (--max-values) if you "
                            "trust it",
    "jsonld.too-many-contexts": "merge the context objects, or raise the limit (--max-contexts) "
                                "if you trust the sender",
    "jsonld.too-many-terms": "define only the terms you use, or raise the limit (--max-terms) "
                             "if you trust the sender",
    "jsonld.term-iri-too-long": "define each prefix by its own namespace IRI rather than "
                                "through a chain of other terms",
    "jsonld.dropped-term": "define the member in the context, remove it, or have the profile "
                           "list it as an ignorable descriptive term",
    "jsonld.relative-iri": "write the reference as an absolute IRI, or define its prefix",
    "jsonld.invalid-iri": "percent-encode the character (a space is %20), or correct the IRI",
    "jsonld.blank-node-id": "give the document an absolute IRI as its @id, or leave @id out",
    "envelope.legacy-key": "write @id and @type; id and type have no meaning in this revision",
    "retrieval.private-address": "the origin is allowed but resolves to a loopback, private or "
                                 "link-local address: if that service is yours, add "
                                 "--allow-private-addresses (or iop:allowPrivateAddresses true)",
    "retrieval.origin-not-allowed": "allow the origin explicitly (--allow-remote ORIGIN or the "
                                    "profile's iop:allowOrigin), or inline the context",
    "retrieval.timeout": "retry later, or raise the profile's iop:totalTimeout or "
                         "iop:checkTimeout if the source is slow but trusted",
    "retrieval.budget": "name fewer remote resources, or raise the profile's iop:maxFetches",
    "constraint.shape-violated": "meet the profile's shape that the reason names (its message "
                                 "says what it requires), or negotiate another profile",
    "constraint.shape-warning": "nothing is required: the profile's shape is advisory "
                                "(sh:Warning or sh:Info)",
    "constraint.shape-unevaluable": "the receiver's profile has shapes it cannot evaluate: its "
                                    "operator can see which with ioa-check lint --explain",
    "alignment.condition-unevaluable": "supply the task parameter the mapping's condition names "
                                       "(for example --param sourceLang=zh)",
    "alignment.ambiguous": "negotiate one mapping, reference it with alignmentRef, or give the "
                           "profile a selection rule",
    "domain.context-not-permitted": "send the task in a domain the profile permits, or "
                                    "negotiate a profile that permits this one",
    "domain.intent-not-permitted": "use an intent that applies to a domain the profile "
                                   "permits, or negotiate a profile that permits its domain",
    "intent.domain-mismatch": "send the task in a domain the intent applies to, or use an "
                              "intent that applies to the task's domain",
    "intent.unknown": "use an intent the receiver's profile knows",
}


# What the receiver's operator can do when a resource it names itself was not retrieved (its
# --profile URL, a shape file the profile pins, an artifact it offers by --alignment URL): the
# retrieval fixes above are written for what a sender names, and inlining a context does not
# apply. A code of its own above keeps its fix where that is the receiver's too (a private
# address, the fetch budget).
RECEIVER_FIXES: dict[str, str] = {
    "retrieval": "the URL is the receiver's own (--profile, a shape file the profile pins, "
                 "--alignment), not the sender's: correct it or allow its origin "
                 "(--allow-remote ORIGIN), or name a local file or an installed profile or "
                 "artifact instead (ioa-check --list)",
    "retrieval.origin-not-allowed": "allow the origin explicitly (--allow-remote ORIGIN), or "
                                    "name a local file or an installed profile or artifact "
                                    "instead (ioa-check --list)",
    "retrieval.timeout": "retry later, or name a local file or an installed profile or "
                         "artifact instead (ioa-check --list)",
}


def fix_for(code: str, receivers: bool = False) -> str:
    """What the person reading a reason of ``code`` can do; ``receivers``: the reason is about
    a resource the receiver names itself (pipeline.remedies.named_by_receiver)."""
    family = code.partition(".")[0]
    if receivers:
        return (RECEIVER_FIXES.get(code) or FIXES.get(code) or RECEIVER_FIXES.get(family)
                or FIXES.get(family, ""))
    return FIXES.get(code) or FIXES.get(family, "")


def finding(
    code: str,
    message: str,
    path: str = "",
    *,
    severity: Severity | None = None,
    section: str | None = None,
    subject: str | None = None,
) -> Finding:
    """Build a finding for a registered code; errors carry the code's effect."""
    entry = CODES[code]
    if severity is None:
        severity = Severity.ERROR if entry.effect is not None else Severity.INFO
    effect = entry.effect if severity is Severity.ERROR else None
    return Finding(
        code=code,
        severity=severity,
        message=message,
        section=section or entry.section,
        path=path,
        effect=effect,
        subject=subject,
    )
