"""The annotations that carry API identity, one source of truth for every layer.

Definitions, revisions and packages are Crossplane's objects with Crossplane's schemas, so
identity rides on annotations (``lockwright.dev/``), which every schema keeps:

- on each definition a revision establishes (CRD, MRD, XRD, webhook configuration):
  :data:`TYPE_DIGEST`, the digest of the definition as the package ships it
  (:func:`lockwright.identity.digest.type_digest`);
- on a revision: :data:`API_DIGEST` (over its type digests), :data:`BASE_LAYER` (the
  package's base-layer digest) and :data:`CONTROLLER_DIGEST` (the runtime image it runs);
- on a package: :data:`PIN_API`, the API digest its revisions must have (an upgrade whose
  API differs fails its preparation), and, when ``lockwright install --api`` made it,
  :data:`INSTALLED_FOR_API` and :data:`INSTALLED_FROM_INDEX`;
- on a custom resource in a manifest: :data:`WRITTEN_AGAINST`, the digest of the type it
  was written against (``lockwright api verify -f`` checks it);
- on a package's metadata (``crossplane.yaml``): :data:`REQUIRES_APIS`, the APIs it needs
  (comma-separated ``plural.group/version`` or ``Kind.group/version``), which the resolver
  finds providers for through the package indexes.
"""

from __future__ import annotations

#: On a revision: the digest of the package image it was made from.
PACKAGE_DIGEST = "lockwright.dev/digest"
TYPE_DIGEST = "lockwright.dev/type-digest"
API_DIGEST = "lockwright.dev/api-digest"
BASE_LAYER = "lockwright.dev/base-layer"
CONTROLLER_DIGEST = "lockwright.dev/controller-digest"
PIN_API = "lockwright.dev/pin-api-digest"
INSTALLED_FOR_API = "lockwright.dev/installed-for-api"
INSTALLED_FROM_INDEX = "lockwright.dev/installed-from-index"
WRITTEN_AGAINST = "lockwright.dev/written-against"
REQUIRES_APIS = "lockwright.dev/requires-apis"
