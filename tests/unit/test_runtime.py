"""Runtime manifests (docs/crossplane.md §13.2), field by field, and Deployment health."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.runtime import manifests as rt

NS = "crossplane-system"
REV = "provider-nop-552a394a8acc"
IMAGE = "xpkg.upbound.io/crossplane-contrib/provider-nop:v0.2.0"


def _inp(kind: str = "Provider", **kw: Any) -> rt.RuntimeInput:
    base: dict[str, Any] = {
        "kind": kind, "package_name": "provider-nop", "revision_name": REV,
        "revision_uid": "rev-uid", "namespace": NS, "image": IMAGE,
        "pull_secrets": ["pkg-pull"], "pull_policy": "IfNotPresent",
        "tls_server_secret": "provider-nop-tls-server",
        "tls_client_secret": "provider-nop-tls-client" if kind == "Provider" else None}
    return rt.RuntimeInput(**{**base, **kw})


OWNER = [{"apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision", "name": REV,
          "uid": "rev-uid", "controller": True, "blockOwnerDeletion": True}]
SELECTOR = {"pkg.crossplane.io/revision": REV, "pkg.crossplane.io/provider": "provider-nop"}
TLS_ITEMS = [{"key": k, "path": k} for k in ("tls.crt", "tls.key", "ca.crt")]


def _field(path: str) -> dict[str, Any]:
    return {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}


def test_provider_deployment_defaults() -> None:
    d = rt.render_deployment(_inp(), None)
    assert d["apiVersion"] == "apps/v1" and d["kind"] == "Deployment"
    assert d["metadata"] == {"name": REV, "namespace": NS, "ownerReferences": OWNER}
    spec = d["spec"]
    assert spec["replicas"] == 1
    assert spec["selector"] == {"matchLabels": SELECTOR}
    tpl = spec["template"]
    assert tpl["metadata"]["labels"] == SELECTOR
    assert tpl["metadata"]["annotations"] == {"prometheus.io/scrape": "true",
                                              "prometheus.io/port": "8080",
                                              "prometheus.io/path": "/metrics"}
    pod = tpl["spec"]
    assert pod["serviceAccountName"] == REV
    assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 2000, "runAsGroup": 2000}
    assert pod["imagePullSecrets"] == [{"name": "pkg-pull"}]
    assert pod["volumes"] == [
        {"name": "tls-client-certs",
         "secret": {"secretName": "provider-nop-tls-client", "items": TLS_ITEMS}},
        {"name": "tls-server-certs",
         "secret": {"secretName": "provider-nop-tls-server", "items": TLS_ITEMS}}]
    [c] = pod["containers"]
    assert c["name"] == "package-runtime"
    assert c["image"] == IMAGE
    assert c["imagePullPolicy"] == "IfNotPresent"
    assert c["securityContext"] == {"runAsUser": 2000, "runAsGroup": 2000,
                                    "allowPrivilegeEscalation": False, "privileged": False,
                                    "runAsNonRoot": True}
    assert c["ports"] == [{"name": "metrics", "containerPort": 8080, "protocol": "TCP"},
                          {"name": "webhook", "containerPort": 9443, "protocol": "TCP"}]
    assert c["volumeMounts"] == [
        {"name": "tls-client-certs", "readOnly": True, "mountPath": "/tls/client"},
        {"name": "tls-server-certs", "readOnly": True, "mountPath": "/tls/server"}]
    assert c["env"] == [
        {"name": "TLS_CLIENT_CERTS_DIR", "value": "/tls/client"},
        {"name": "TLS_SERVER_CERTS_DIR", "value": "/tls/server"},
        {"name": "POD_NAMESPACE", "valueFrom": _field("metadata.namespace")},
        {"name": "PROVIDER_NAME",
         "valueFrom": _field("metadata.labels['pkg.crossplane.io/provider']")},
        {"name": "REVISION_NAME",
         "valueFrom": _field("metadata.labels['pkg.crossplane.io/revision']")},
        {"name": "REVISION_UID", "value": "rev-uid"},
        {"name": "WEBHOOK_TLS_CERT_DIR", "value": "$(TLS_SERVER_CERTS_DIR)"},
    ]


def test_function_deployment() -> None:
    d = rt.render_deployment(_inp("Function", revision_name="fn-1", package_name="fn"), None)
    sel = {"pkg.crossplane.io/revision": "fn-1", "pkg.crossplane.io/function": "fn"}
    assert d["spec"]["selector"]["matchLabels"] == sel
    assert d["metadata"]["ownerReferences"][0]["kind"] == "FunctionRevision"
    tpl = d["spec"]["template"]
    assert "annotations" not in tpl["metadata"]  # no prometheus annotations for functions
    [c] = tpl["spec"]["containers"]
    assert c["ports"] == [{"name": "metrics", "containerPort": 8080, "protocol": "TCP"},
                          {"name": "grpc", "containerPort": 9443, "protocol": "TCP"}]
    assert [e["name"] for e in c["env"]] == ["TLS_SERVER_CERTS_DIR", "FUNCTION_NAME",
                                            "REVISION_NAME", "REVISION_UID"]
    assert c["env"][1]["valueFrom"] == _field("metadata.labels['pkg.crossplane.io/function']")
    assert [v["name"] for v in tpl["spec"]["volumes"]] == ["tls-server-certs"]


DRC: dict[str, Any] = {"spec": {
    "deploymentTemplate": {
        "metadata": {"labels": {"team": "a"}, "annotations": {"x": "y"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"drc": "ignored"}},
            "template": {
                "metadata": {"labels": {"extra": "1"},
                             "annotations": {"prometheus.io/scrape": "false"}},
                "spec": {
                    "serviceAccountName": "external-sa",
                    "securityContext": {"runAsUser": 1},
                    "imagePullSecrets": [{"name": "drc-secret"}],
                    "containers": [
                        {"name": "sidecar", "image": "busybox"},
                        {"name": "package-runtime", "image": "custom:1",
                         "imagePullPolicy": "Always", "args": ["--debug"],
                         "env": [{"name": "A", "value": "1"},
                                 {"name": "POD_NAMESPACE", "value": "overridden"}],
                         "ports": [{"name": "metrics", "containerPort": 9090}]},
                    ]}}}},
    "serviceAccountTemplate": {"metadata": {"name": "external-sa", "labels": {"sa": "1"}}},
    "serviceTemplate": {"metadata": {"name": "custom-svc", "annotations": {"s": "1"}}},
}}


def test_drc_overlay() -> None:
    inp = _inp(pull_policy="Never", image_config_pull_secret="ic-secret")
    d = rt.render_deployment(inp, DRC)
    assert d["metadata"]["labels"] == {"team": "a"}
    assert d["metadata"]["annotations"] == {"x": "y"}
    assert d["spec"]["replicas"] == 3
    assert d["spec"]["selector"] == {"matchLabels": SELECTOR}  # replaced, not merged
    tpl = d["spec"]["template"]
    assert tpl["metadata"]["labels"] == {"extra": "1", **SELECTOR}
    assert tpl["metadata"]["annotations"] == {"prometheus.io/scrape": "false"}  # opted out
    pod = tpl["spec"]
    assert pod["serviceAccountName"] == "external-sa"
    assert pod["securityContext"] == {"runAsUser": 1}
    assert pod["imagePullSecrets"] == [{"name": "pkg-pull"}, {"name": "ic-secret"}]
    assert [c["name"] for c in pod["containers"]] == ["package-runtime", "sidecar"]
    c = pod["containers"][0]
    assert c["image"] == "custom:1"  # the DRC's image wins
    assert c["imagePullPolicy"] == "Never"  # packagePullPolicy overrides
    assert c["args"] == ["--debug"]
    assert c["ports"][0] == {"name": "metrics", "containerPort": 9090}
    env = {e["name"]: e for e in c["env"]}
    assert env["A"] == {"name": "A", "value": "1"}
    assert env["POD_NAMESPACE"]["valueFrom"] == _field("metadata.namespace")
    assert [e["name"] for e in c["env"]].index("A") == 0
    assert DRC["spec"]["deploymentTemplate"]["spec"]["replicas"] == 3  # DRC untouched
    assert pod["containers"][1] == {"name": "sidecar", "image": "busybox"}


@pytest.mark.parametrize(("controller_image", "want"), [
    (None, IMAGE), ("registry.io/nop-controller:v1", "registry.io/nop-controller:v1")])
def test_controller_image_v1x(controller_image: str | None, want: str) -> None:
    d = rt.render_deployment(_inp(controller_image=controller_image), None)
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == want


def test_awaiting_activation_scales_to_zero() -> None:
    assert rt.render_deployment(_inp(), DRC, awaiting_activation=True)["spec"]["replicas"] == 0


def test_service_account() -> None:
    inp = _inp(crossplane_sa_pull_secrets=["cp-secret", "pkg-pull"])
    sa = rt.render_service_account(inp, None, live_pull_secrets=["added-by-other"])
    assert sa == {"apiVersion": "v1", "kind": "ServiceAccount",
                  "metadata": {"name": REV, "namespace": NS, "ownerReferences": OWNER},
                  "imagePullSecrets": [{"name": "pkg-pull"}, {"name": "cp-secret"},
                                       {"name": "added-by-other"}]}
    d = rt.render_deployment(inp, None)
    assert rt.manages_service_account(d, sa)


def test_external_service_account_not_managed() -> None:
    drc = {"spec": {"deploymentTemplate": {"spec": {"template": {"spec": {
        "serviceAccountName": "someone-elses"}}}}}}
    sa = rt.render_service_account(_inp(), drc)
    assert sa["metadata"]["name"] == REV
    assert not rt.manages_service_account(rt.render_deployment(_inp(), drc), sa)
    named = rt.render_service_account(_inp(), DRC)
    assert named["metadata"]["name"] == "external-sa"
    assert named["metadata"]["labels"] == {"sa": "1"}
    assert rt.manages_service_account(rt.render_deployment(_inp(), DRC), named)


def test_provider_service() -> None:
    assert rt.render_service(_inp(), None) == {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "provider-nop", "namespace": NS, "ownerReferences": OWNER},
        "spec": {"selector": SELECTOR, "ports": [
            {"name": "webhook", "protocol": "TCP", "port": 9443, "targetPort": "webhook"}]}}


def test_function_service_and_endpoint() -> None:
    svc = rt.render_service(_inp("Function", package_name="fn"), None)
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["ports"] == [{"name": "grpc", "protocol": "TCP", "port": 9443,
                                     "targetPort": "grpc", "appProtocol": "tls"}]
    assert rt.function_endpoint("fn", NS) == "dns:///fn.crossplane-system:9443"


def test_service_from_drc() -> None:
    svc = rt.render_service(_inp(), DRC)
    assert svc["metadata"]["name"] == "custom-svc"
    assert svc["metadata"]["annotations"] == {"s": "1"}
    assert rt.service_name(_inp(), DRC) == "custom-svc"
    assert rt.service_name(_inp(), None) == "provider-nop"


def _dep(*conds: dict[str, str]) -> dict[str, Any]:
    return {"status": {"conditions": list(conds)}}


@pytest.mark.parametrize(("dep", "kind", "ok", "message"), [
    (_dep({"type": "Available", "status": "True"}), "Provider", True, ""),
    (_dep({"type": "Progressing", "status": "True"},
          {"type": "Available", "status": "False",
           "message": "Deployment does not have minimum availability."}), "Provider", False,
     ("provider package deployment is unavailable with message: Deployment does not have "
     "minimum availability.")),
    (_dep(), "Function", False,
     'function package deployment has no condition of type "Available" yet'),
    (None, "Provider", False,
     'provider package deployment has no condition of type "Available" yet'),
])
def test_deployment_health(dep: dict[str, Any] | None, kind: str, ok: bool,
                           message: str) -> None:
    assert rt.deployment_health(dep, kind) == (ok, message)


def _observed_dep(generation: int | None, observed: int | None,
                  conditions: bool = True) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": [{"type": "Available", "status": "False"}]
                              if conditions else []}
    if observed is not None:
        status["observedGeneration"] = observed
    return {"metadata": {} if generation is None else {"generation": generation},
            "status": status}


@pytest.mark.parametrize(("dep", "want"), [
    (_observed_dep(3, 3), True),
    (_observed_dep(3, 4), True),
    (_observed_dep(3, 2), False),  # the controller has not seen the latest spec
    (_observed_dep(2, 2, conditions=False), False),  # no conditions written yet
    (_observed_dep(None, None), True),  # no generation: nothing to wait for
    ({"metadata": {"generation": 1}}, False),  # no status at all
    ({}, False),
])
def test_deployment_observed(dep: dict[str, Any], want: bool) -> None:
    assert rt.deployment_observed(dep) is want
