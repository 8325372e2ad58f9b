"""The built-in resources devcluster serves, with their kube-apiserver printer columns."""

from __future__ import annotations

from lockwright.devcluster.types import ResourceType

_AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}

BUILTINS: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "Namespace", "namespaces", "namespace", False, ("ns",),
                 verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
                 subresources=("status",),
                 printer_columns=(
                     {"name": "Status", "type": "string", "jsonPath": ".status.phase"}, _AGE)),
    ResourceType("", "v1", "Secret", "secrets", "secret", True,
                 printer_columns=(
                     {"name": "Type", "type": "string", "jsonPath": ".type"},
                     {"name": "Data", "type": "string", "jsonPath": ".data"}, _AGE)),
    ResourceType("", "v1", "ConfigMap", "configmaps", "configmap", True, ("cm",),
                 printer_columns=(
                     {"name": "Data", "type": "string", "jsonPath": ".data"}, _AGE)),
    ResourceType("", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", True, ("sa",),
                 printer_columns=(
                     {"name": "Secrets", "type": "string", "jsonPath": ".secrets"}, _AGE)),
    ResourceType("", "v1", "Service", "services", "service", True, ("svc",),
                 categories=("all",), subresources=("status",),
                 printer_columns=(
                     {"name": "Type", "type": "string", "jsonPath": ".spec.type"},
                     {"name": "Cluster-IP", "type": "string", "jsonPath": ".spec.clusterIP"},
                     {"name": "External-IP", "type": "string", "jsonPath": ".spec.externalIPs"},
                     {"name": "Port(s)", "type": "string", "jsonPath": ".spec.ports"},
                     _AGE,
                     {"name": "Selector", "type": "string", "jsonPath": ".spec.selector",
                      "priority": 1})),
    ResourceType("", "v1", "Event", "events", "event", True, ("ev",),
                 printer_columns=(
                     {"name": "Last Seen", "type": "date", "jsonPath": ".lastTimestamp"},
                     {"name": "Type", "type": "string", "jsonPath": ".type"},
                     {"name": "Reason", "type": "string", "jsonPath": ".reason"},
                     {"name": "Object", "type": "string", "jsonPath": ".involvedObject.name"},
                     {"name": "Message", "type": "string", "jsonPath": ".message"})),
    ResourceType("apps", "v1", "Deployment", "deployments", "deployment", True, ("deploy",),
                 categories=("all",), subresources=("status", "scale"),
                 printer_columns=(
                     {"name": "Ready", "type": "string", "jsonPath": ".status.readyReplicas"},
                     {"name": "Up-to-date", "type": "integer",
                      "jsonPath": ".status.updatedReplicas"},
                     {"name": "Available", "type": "integer",
                      "jsonPath": ".status.availableReplicas"},
                     _AGE,
                     {"name": "Containers", "type": "string",
                      "jsonPath": ".spec.template.spec.containers[*].name", "priority": 1},
                     {"name": "Images", "type": "string",
                      "jsonPath": ".spec.template.spec.containers[*].image", "priority": 1},
                     {"name": "Selector", "type": "string",
                      "jsonPath": ".spec.selector", "priority": 1})),
    ResourceType("events.k8s.io", "v1", "Event", "events", "event", True, ("ev",),
                 printer_columns=(
                     {"name": "Reason", "type": "string", "jsonPath": ".reason"},
                     {"name": "Note", "type": "string", "jsonPath": ".note"}, _AGE)),
    ResourceType("rbac.authorization.k8s.io", "v1", "Role", "roles", "role", True,
                 printer_columns=(
                     {"name": "Created At", "type": "date",
                      "jsonPath": ".metadata.creationTimestamp"},)),
    ResourceType("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings",
                 "rolebinding", True,
                 printer_columns=(
                     {"name": "Role", "type": "string", "jsonPath": ".roleRef.name"}, _AGE)),
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles",
                 "clusterrole", False,
                 printer_columns=(
                     {"name": "Created At", "type": "date",
                      "jsonPath": ".metadata.creationTimestamp"},)),
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding",
                 "clusterrolebindings", "clusterrolebinding", False,
                 printer_columns=(
                     {"name": "Role", "type": "string", "jsonPath": ".roleRef.name"}, _AGE)),
    ResourceType("apiextensions.k8s.io", "v1", "CustomResourceDefinition",
                 "customresourcedefinitions", "customresourcedefinition", False, ("crd", "crds"),
                 subresources=("status",),
                 printer_columns=(
                     {"name": "Created At", "type": "date",
                      "jsonPath": ".metadata.creationTimestamp"},)),
    ResourceType("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
                 "validatingwebhookconfigurations", "validatingwebhookconfiguration", False,
                 printer_columns=(
                     {"name": "Webhooks", "type": "integer", "jsonPath": ".webhooks"}, _AGE)),
    ResourceType("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration",
                 "mutatingwebhookconfigurations", "mutatingwebhookconfiguration", False,
                 printer_columns=(
                     {"name": "Webhooks", "type": "integer", "jsonPath": ".webhooks"}, _AGE)),
    ResourceType("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy",
                 "validatingadmissionpolicies", "validatingadmissionpolicy", False,
                 subresources=("status",),
                 printer_columns=(
                     {"name": "Validations", "type": "integer",
                      "jsonPath": ".spec.validations"},
                     {"name": "ParamKind", "type": "string", "jsonPath": ".spec.paramKind"},
                     _AGE)),
    ResourceType("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding",
                 "validatingadmissionpolicybindings", "validatingadmissionpolicybinding", False,
                 printer_columns=(
                     {"name": "PolicyName", "type": "string", "jsonPath": ".spec.policyName"},
                     {"name": "ParamRef", "type": "string", "jsonPath": ".spec.paramRef"},
                     _AGE)),
    # Answered, never stored (devcluster.guard.access_review).
    ResourceType("authorization.k8s.io", "v1", "SelfSubjectAccessReview",
                 "selfsubjectaccessreviews", "selfsubjectaccessreview", False,
                 verbs=("create",)),
    ResourceType("coordination.k8s.io", "v1", "Lease", "leases", "lease", True,
                 printer_columns=(
                     {"name": "Holder", "type": "string", "jsonPath": ".spec.holderIdentity"},
                     _AGE)),
)
