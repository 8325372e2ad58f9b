"""The differences between devcluster and kube-apiserver the differential check still
finds, each explained (README.md, "Real control plane", lists them with the ones fixed)."""

EXPLAINED: dict[tuple[str, str], str] = {
    ("list_with_selectors", "limit"):
        "kube-apiserver stops reading once a page is full and hands out a continue token even "
        "when no further item matches the selector (its next page is empty); devcluster "
        "filters the whole list first and knows there is none. Clients follow either.",
    ("metadata_only", "get"):
        "a Secret created with stringData: kube-apiserver records the field manager's fields "
        "after stringData became data (f:data), devcluster before (f:stringData).",
    ("metadata_only", "list"): "the same Secret, listed.",
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
