"""API identity: a digest per type definition a package ships, and per revision over them.

- :mod:`lockwright.identity.digest`: the canonical form of a definition (CRD, MRD, XRD,
  webhook configuration) and its digest, and a revision's API digest.
- :mod:`lockwright.identity.names`: the annotations that carry identity.
- :mod:`lockwright.identity.apis`: an API as users name it (``plural.group/version``).
- :mod:`lockwright.identity.surface`: a cluster's served types as rows, and their sum.
- :mod:`lockwright.identity.sums`: a sum read back; two surfaces compared per type.
- :mod:`lockwright.identity.diff`: two clusters compared, definitions explained by field.
- :mod:`lockwright.identity.manifests`: whether manifests' types are served as written.
"""
