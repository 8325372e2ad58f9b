"""The differences between devcluster and kube-apiserver the differential check still
finds, each explained (docs/testing.md, "Fidelity", lists them with the ones fixed)."""

EXPLAINED: dict[tuple[str, str], str] = {
    ("list_with_selectors", "limit"):
        "kube-apiserver stops reading once a page is full and hands out a continue token even "
        "when no further item matches the selector (its next page is empty); devcluster "
        "filters the whole list first and knows there is none. Clients follow either.",
    ("table", "list"):
        "Table column descriptions: kube-apiserver copies each field's whole OpenAPI "
        "description, devcluster a shorter one. Cells, names, types and rows are equal.",
    ("table", "get"): "the same column descriptions.",
    ("custom_resources", "table"): "the same column descriptions, for a custom resource.",
    ("custom_resources", "crd"):
        "kube-apiserver's CRD controllers act moments after the create (the clean-up "
        "finalizer, accepted names, Established); devcluster's in the create's own write, "
        "so its answer already shows them. Both are Established before custom resources are "
        "served, which is what clients wait for.",
    ("custom_resources", "established"):
        "the same controllers: kube-apiserver's write the CRD's status as manager "
        "kube-apiserver in a second managedFields entry; devcluster's write it in the "
        "client's own entry, and the clean-up finalizer comes with the create.",
    ("custom_resources", "crd in use delete"):
        "deleting a CRD: devcluster bumps generation and sets deletionGracePeriodSeconds: 0, "
        "as kube-apiserver does for objects deleted with finalizers; kube-apiserver's CRD "
        "strategy does neither. The condition's wording for the clean-up differs too.",
    ("watch_too_old", "410"):
        "after an etcd compaction kube-apiserver's watch cache still serves its recent "
        "events, so a watch from before the compaction gets them; devcluster's change log is "
        "its only history and answers 410 Gone at once (kube-apiserver does too once the "
        "version leaves its cache's window). lockwright's watcher relists on 410 either way.",
    ("discovery", "core"):
        "serverAddressByClientCIDRs: kube-apiserver names its advertised address, devcluster "
        "none (clients use the kubeconfig's server).",
    ("discovery", "version"):
        "/version: kube-apiserver adds emulationMajor/emulationMinor and "
        "minCompatibility fields devcluster leaves out.",
}


# --- recorded traffic (tests/fidelity/traffic.py) ------------------------------------------
from collections.abc import Callable  # noqa: E402 - the traffic rules' part of the module
from dataclasses import dataclass  # noqa: E402
from typing import Any  # noqa: E402


@dataclass(frozen=True)
class Rule:
    """A difference of replayed traffic explained: the shapes it concerns, and the answer
    paths (prefixes) where the two servers may differ for that reason."""

    name: str
    applies: Callable[[dict[str, Any]], bool]
    paths: tuple[str, ...]
    why: str
    varies: bool = False  # a race decides whether the difference shows in a given run

    def explains(self, shape: dict[str, Any], differing: list[str]) -> bool:
        """True when the rule concerns ``shape`` and covers every differing path."""
        return self.applies(shape) and all(
            d.split(":")[0].startswith(self.paths) for d in differing)


def _path_has(*parts: str) -> Callable[[dict[str, Any]], bool]:
    return lambda s: any(p in s["path"] for p in parts)


TRAFFIC_RULES: list[Rule] = [
    Rule("protobuf answers", lambda s: s["accept"].startswith("application/vnd.kubernetes.protobuf"),
         (".media",),
         "kube-apiserver answers protobuf to a client that lists it first; devcluster answers "
         "JSON, which every such client (kubectl, client-go) lists too. The object's "
         "apiVersion and kind are compared and equal."),
    Rule("CRD controllers", _path_has("customresourcedefinitions"),
         (".body.metadata.finalizers", ".body.metadata.managedFields", ".body.status",
          ".body.items"),
         EXPLAINED[("custom_resources", "crd")] + " " +
         EXPLAINED[("custom_resources", "established")]),
    Rule("Deployment controller", _path_has("/deployments"),
         (".body.status", ".body.metadata.annotations", ".body.metadata.managedFields"),
         "devcluster simulates the Deployment controller at once (--deployment-delay, "
         "0.05 s), so a Deployment read back is already available; kube's kwok nodes and "
         "controller-manager take longer. lockwright waits for Available either way. When "
         "kube's controller gets to the Deployment before the read (a busy machine: it "
         "varies from run to run), the read also shows its writes, which devcluster's "
         "simulator does not make: the deployment.kubernetes.io/revision annotation and "
         "kube-controller-manager's managedFields entries. lockwright reads neither. The "
         "replay's Deployment has no annotations of its own, so the whole annotations map "
         "differs then (absent on devcluster), not only the one key.",
         varies=True),
    Rule("Table column descriptions", lambda s: "as=Table" in s["accept"],
         (".body.columnDefinitions",), EXPLAINED[("table", "list")]),
    Rule("TokenRequest metadata", _path_has("/token"),
         (".body.metadata.managedFields", ".body.metadata.uid"),
         "kube-apiserver's TokenRequest answer carries a uid and a managedFields entry for "
         "the request itself; devcluster's neither. Clients read status.token."),
    Rule("defaults in managedFields", lambda s: (s["path"].startswith(
        "/api/v1/namespaces") and s["path"].count("/") <= 4) or "/services" in s["path"],
         (".body.metadata.managedFields",),
         "devcluster applies a Namespace's and a Service's defaults (spec.finalizers, "
         "status.phase; clusterIP, ipFamilies ...) before it records the client's fields, "
         "so its managedFields entry lists them; kube-apiserver's strategy sets them "
         "after. The object is equal."),
    Rule("events of kube's nodes", lambda s: s["path"] == "/api/v1/events", (".body.items",),
         "a cluster-wide list of Events: kube's kwok node and controllers post their own "
         "(a Node registered, ...); devcluster has no nodes. The replay's own are equal."),
    Rule("status subresource writes", lambda s: s["path"].endswith("/status") or (
        "PartialObjectMetadata" in s["accept"] or "as=Table" in s["accept"]),
         (".body.metadata.managedFields", ".body.status", ".body.items",
          ".body.rows", ".body.columnDefinitions"),
         "a write to /status of an object that has none: kube-apiserver records it in a "
         "managedFields entry of subresource status and leaves status out; devcluster "
         "records it in the client's main entry and answers status: null. Lists of those "
         "objects differ in the same entries."),
    Rule("Event fields without omitempty", _path_has("/events"),
         (".body.eventTime", ".body.firstTimestamp", ".body.lastTimestamp",
          ".body.reportingComponent", ".body.reportingInstance", ".body.source"),
         "core/v1 Event: kube-apiserver writes the fields its Go type lacks omitempty on "
         "(eventTime, firstTimestamp, lastTimestamp as null; source {}; reporting* as "
         "\"\"); devcluster leaves them out. Readers treat absent and null alike."),
]


TRAFFIC_RULES += [
    Rule("/openapi/v3 index media type", lambda s: s["path"] == "/openapi/v3", (".media",),
         "kube-apiserver serves the /openapi/v3 index with Content-Type text/plain to "
         "Accept: application/json,*/*; devcluster says application/json. The body is the "
         "same JSON and clients (kubectl's openapi3 root) parse it whatever the header."),
    Rule("/openapi/v2 in protobuf", lambda s: s["path"] == "/openapi/v2" and (
        "protobuf" in s["accept"]), (".code", ".media", ".body", ".kind"),
         "kubectl asks /openapi/v2 for gnostic's protobuf Document only, and kube-apiserver "
         "sends it; devcluster answers 406 (it serves v2 as JSON only, and /openapi/v3, "
         "which the replay finds alike). kubectl goes on without the v2 document: every "
         "kubectl command of the e2e tests passes on both servers."),
]


def explain(shape: dict[str, Any], differing: list[str]) -> Rule | None:
    """The rule that explains a replayed shape's difference, if any."""
    return next((r for r in TRAFFIC_RULES if r.explains(shape, differing)), None)
