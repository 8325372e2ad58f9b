"""Schemas of apimachinery meta types and of built-in kinds, for the OpenAPI documents.

Built-in kinds get their top-level fields only: enough for ``kubectl explain configmap``
and for kubectl to find each kind, not a copy of upstream's definitions.
"""

from __future__ import annotations

from typing import Any

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
REF = "#/components/schemas/"

API_VERSION_DESC = (
    "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject "
    "unrecognized values. More info: https://git.k8s.io/community/contributors/devel/"
    "sig-architecture/api-conventions.md#resources")
KIND_DESC = (
    "Kind is a string value representing the REST resource this object represents. Servers "
    "may infer this from the endpoint the client submits requests to. Cannot be updated. In "
    "CamelCase. More info: https://git.k8s.io/community/contributors/devel/"
    "sig-architecture/api-conventions.md#types-kinds")
METADATA_DESC = (
    "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/"
    "sig-architecture/api-conventions.md#metadata")
LIST_METADATA_DESC = (
    "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/"
    "sig-architecture/api-conventions.md#types-kinds")


def ref(name: str, description: str = "") -> dict[str, Any]:
    """A property pointing at a named schema, wrapped in allOf as kube publishes it."""
    out: dict[str, Any] = {"allOf": [{"$ref": REF + name}]}
    if description:
        out["description"] = description
    return out


def _s(type_: str, description: str, **extra: Any) -> dict[str, Any]:
    return {"type": type_, "description": description, **extra}


_STR_MAP = {"type": "object", "additionalProperties": {"type": "string", "default": ""}}


def meta_schemas() -> dict[str, dict[str, Any]]:
    """ObjectMeta, ListMeta, Status, DeleteOptions, Patch and the types they use."""
    time_ref = {"$ref": REF + META + "Time"}
    return {
        META + "Time": _s("string", "Time is a wrapper around time.Time which supports correct "
                          "marshaling to YAML and JSON.", format="date-time"),
        META + "FieldsV1": _s("object", "FieldsV1 stores a set of fields in a data structure "
                              "like a Trie, in JSON format."),
        META + "ObjectMeta": {
            "type": "object",
            "description": "ObjectMeta is metadata that all persisted resources must have, "
                           "which includes all objects users must create.",
            "properties": {
                "annotations": {**_STR_MAP, "description": "Annotations is an unstructured "
                                "key value map stored with a resource."},
                "creationTimestamp": {**ref(META + "Time"), "description": "CreationTimestamp"
                                      " is a timestamp representing the server time when "
                                      "this object was created."},
                "deletionGracePeriodSeconds": _s("integer", "Number of seconds allowed for "
                                                 "this object to gracefully terminate.",
                                                 format="int64"),
                "deletionTimestamp": ref(META + "Time", "RFC 3339 date and time at which this "
                                         "resource will be deleted."),
                "finalizers": {"type": "array", "items": {"type": "string", "default": ""},
                               "description": "Must be empty before the object is deleted "
                               "from the registry.", "x-kubernetes-list-type": "set"},
                "generateName": _s("string", "GenerateName is an optional prefix, used by the "
                                   "server, to generate a unique name."),
                "generation": _s("integer", "A sequence number representing a specific "
                                 "generation of the desired state.", format="int64"),
                "labels": {**_STR_MAP, "description": "Map of string keys and values that "
                           "can be used to organize and categorize objects."},
                "managedFields": {"type": "array", "description": "ManagedFields maps "
                                  "workflow-id and version to the set of fields that are "
                                  "managed by that workflow.",
                                  "items": {"default": {}, **ref(META + "ManagedFieldsEntry")}},
                "name": _s("string", "Name must be unique within a namespace."),
                "namespace": _s("string", "Namespace defines the space within which each name "
                                "must be unique."),
                "ownerReferences": {"type": "array", "description": "List of objects depended "
                                    "by this object.", "x-kubernetes-patch-merge-key": "uid",
                                    "x-kubernetes-patch-strategy": "merge",
                                    "x-kubernetes-list-type": "map",
                                    "x-kubernetes-list-map-keys": ["uid"],
                                    "items": {"default": {}, **ref(META + "OwnerReference")}},
                "resourceVersion": _s("string", "An opaque value that represents the internal "
                                      "version of this object."),
                "selfLink": _s("string", "Deprecated: selfLink is a legacy read-only field "
                               "that is no longer populated by the system."),
                "uid": _s("string", "UID is the unique in time and space value for this "
                          "object."),
            }},
        META + "ManagedFieldsEntry": {
            "type": "object", "description": "ManagedFieldsEntry is a workflow-id, a FieldSet "
            "and the group version of the resource that the fieldset applies to.",
            "properties": {
                "apiVersion": _s("string", "APIVersion defines the version of this resource "
                                 "that this field set applies to."),
                "fieldsType": _s("string", "FieldsType is the discriminator for the different "
                                 "fields format and version."),
                "fieldsV1": ref(META + "FieldsV1", "FieldsV1 holds the first JSON version "
                                "format."),
                "manager": _s("string", "Manager is an identifier of the workflow managing "
                              "these fields."),
                "operation": _s("string", "Operation is the type of operation which lead to "
                                "this ManagedFieldsEntry being created."),
                "subresource": _s("string", "Subresource is the name of the subresource used "
                                  "to update that object."),
                "time": {**time_ref, "description": "Time is the timestamp of when the "
                         "ManagedFields entry was added."}}},
        META + "OwnerReference": {
            "type": "object", "required": ["apiVersion", "kind", "name", "uid"],
            "description": "OwnerReference contains enough information to let you identify "
                           "an owning object.",
            "properties": {
                "apiVersion": _s("string", "API version of the referent.", default=""),
                "blockOwnerDeletion": _s("boolean", "If true, AND if the owner has the "
                                         "\"foregroundDeletion\" finalizer, then the owner "
                                         "cannot be deleted from the key-value store until "
                                         "this reference is removed."),
                "controller": _s("boolean", "If true, this reference points to the managing "
                                 "controller."),
                "kind": _s("string", "Kind of the referent.", default=""),
                "name": _s("string", "Name of the referent.", default=""),
                "uid": _s("string", "UID of the referent.", default="")},
            "x-kubernetes-map-type": "atomic"},
        META + "ListMeta": {
            "type": "object", "description": "ListMeta describes metadata that synthetic "
            "resources must have, including lists and various status objects.",
            "properties": {
                "continue": _s("string", "continue may be set if the user set a limit on the "
                               "number of items returned."),
                "remainingItemCount": _s("integer", "The number of subsequent items in the "
                                         "list which are not included in this list response.",
                                         format="int64"),
                "resourceVersion": _s("string", "String that identifies the server's internal "
                                      "version of this object."),
                "selfLink": _s("string", "Deprecated: selfLink is a legacy read-only field.")}},
        META + "Status": {
            "type": "object", "description": "Status is a return value for calls that don't "
            "return other objects.",
            "properties": {
                "apiVersion": _s("string", API_VERSION_DESC),
                "code": _s("integer", "Suggested HTTP return code for this status.",
                           format="int32"),
                "details": ref(META + "StatusDetails", "Extended data associated with the "
                               "reason."),
                "kind": _s("string", KIND_DESC),
                "message": _s("string", "A human-readable description of the status of this "
                              "operation."),
                "metadata": ref(META + "ListMeta", LIST_METADATA_DESC),
                "reason": _s("string", "A machine-readable description of why this operation "
                             "is in the \"Failure\" status."),
                "status": _s("string", "Status of the operation. One of: \"Success\" or "
                             "\"Failure\".")},
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "Status",
                                                 "version": "v1"}]},
        META + "StatusDetails": {
            "type": "object", "description": "StatusDetails is a set of additional properties "
            "that MAY be set by the server to provide additional information about a response.",
            "properties": {
                "causes": {"type": "array", "description": "The Causes array includes more "
                           "details associated with the StatusReason failure.",
                           "items": {"default": {}, **ref(META + "StatusCause")}},
                "group": _s("string", "The group attribute of the resource."),
                "kind": _s("string", "The kind attribute of the resource."),
                "name": _s("string", "The name attribute of the resource."),
                "retryAfterSeconds": _s("integer", "If specified, the time in seconds before "
                                        "the operation should be retried.", format="int32"),
                "uid": _s("string", "UID of the resource.")}},
        META + "StatusCause": {
            "type": "object", "description": "StatusCause provides more information about an "
            "api.Status failure.",
            "properties": {"field": _s("string", "The field of the resource that has caused "
                                       "this error."),
                           "message": _s("string", "A human-readable description of the cause "
                                         "of the error."),
                           "reason": _s("string", "A machine-readable description of the "
                                        "cause of the error.")}},
        META + "Preconditions": {
            "type": "object", "description": "Preconditions must be fulfilled before an "
            "operation (update, delete, etc.) is carried out.",
            "properties": {"resourceVersion": _s("string", "Specifies the target "
                                                 "ResourceVersion"),
                           "uid": _s("string", "Specifies the target UID.")}},
        META + "DeleteOptions": {
            "type": "object", "description": "DeleteOptions may be provided when deleting an "
            "API object.",
            "properties": {
                "apiVersion": _s("string", API_VERSION_DESC),
                "dryRun": {"type": "array", "items": {"type": "string", "default": ""},
                           "description": "When present, indicates that modifications should "
                           "not be persisted."},
                "gracePeriodSeconds": _s("integer", "The duration in seconds before the "
                                         "object should be deleted.", format="int64"),
                "kind": _s("string", KIND_DESC),
                "orphanDependents": _s("boolean", "Deprecated: please use the "
                                       "PropagationPolicy."),
                "preconditions": ref(META + "Preconditions", "Must be fulfilled before a "
                                     "deletion is carried out."),
                "propagationPolicy": _s("string", "Whether and how garbage collection will be "
                                        "performed.")}},
        META + "Patch": _s("object", "Patch is provided to give a concrete name and type to "
                           "the Kubernetes PATCH request body."),
    }


_OBJ = "object"
# Top-level fields of built-in kinds besides apiVersion, kind and metadata.
BUILTIN_FIELDS: dict[str, dict[str, tuple[str, str]]] = {
    "Namespace": {"spec": (_OBJ, "Spec defines the behavior of the Namespace."),
                  "status": (_OBJ, "Status describes the current status of a Namespace.")},
    "Secret": {"data": ("map", "Data contains the secret data, base64 encoded."),
               "immutable": ("boolean", ("Immutable, if set to true, ensures that data stored "
                             "in the Secret cannot be updated.")),
               "stringData": ("map", ("stringData allows specifying non-binary secret data in "
                              "string form.")),
               "type": ("string", "Used to facilitate programmatic handling of secret data.")},
    "ConfigMap": {"binaryData": ("map", "BinaryData contains the binary data."),
                  "data": ("map", "Data contains the configuration data."),
                  "immutable": ("boolean", ("Immutable, if set to true, ensures that data "
                                "stored in the ConfigMap cannot be updated."))},
    "ServiceAccount": {
        "automountServiceAccountToken": ("boolean", ("Whether pods running as this service "
                                         "account should have an API token automatically "
                                         "mounted.")),
        "imagePullSecrets": ("array", ("List of references to secrets in the same namespace "
                             "to use for pulling any images.")),
        "secrets": ("array", "Secrets is a list of the secrets in the same namespace.")},
    "Service": {"spec": (_OBJ, "Spec defines the behavior of a service."),
                "status": (_OBJ, "Most recently observed status of the service.")},
    "Deployment": {"spec": (_OBJ, "Specification of the desired behavior of the Deployment."),
                   "status": (_OBJ, "Most recently observed status of the Deployment.")},
    "Role": {"rules": ("array", "Rules holds all the PolicyRules for this Role")},
    "ClusterRole": {"aggregationRule": (_OBJ, ("AggregationRule is an optional field that "
                                        "describes how to build the Rules.")),
                    "rules": ("array", "Rules holds all the PolicyRules for this ClusterRole")},
    "RoleBinding": {"roleRef": (_OBJ, ("RoleRef can reference a Role in the current namespace "
                                "or a ClusterRole in the global namespace.")),
                    "subjects": ("array", ("Subjects holds references to the objects the role "
                                 "applies to."))},
    "ClusterRoleBinding": {"roleRef": (_OBJ, ("RoleRef can only reference a ClusterRole in the "
                                       "global namespace.")),
                           "subjects": ("array", ("Subjects holds references to the objects "
                                        "the role applies to."))},
    "CustomResourceDefinition": {
        "spec": (_OBJ, "spec describes how the user wants the resources to appear"),
        "status": (_OBJ, "status indicates the actual state of the CustomResourceDefinition")},
    "ValidatingWebhookConfiguration": {"webhooks": ("array", ("Webhooks is a list of webhooks "
                                                    "and the affected resources and "
                                                    "operations."))},
    "MutatingWebhookConfiguration": {"webhooks": ("array", ("Webhooks is a list of webhooks "
                                                  "and the affected resources and "
                                                  "operations."))},
    "Lease": {"spec": (_OBJ, "spec contains the specification of the Lease.")},
}


def builtin_properties(kind: str) -> dict[str, Any]:
    """Top-level property schemas of a built-in kind (type plus description)."""
    out: dict[str, Any] = {}
    for name, (type_, description) in BUILTIN_FIELDS.get(kind, {}).items():
        if type_ == "map":
            out[name] = {**_STR_MAP, "description": description}
        elif type_ == "array":
            out[name] = {"type": "array", "items": {"type": "object"},
                         "description": description}
        else:
            out[name] = {"type": type_, "description": description}
    return out
