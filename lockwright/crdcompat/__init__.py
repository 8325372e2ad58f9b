"""CRD compatibility: what replacing a CustomResourceDefinition by a new one would break.

A pure function over the old and the new CRD as the Kubernetes API returns them (plain
dicts), covering at least what OLM's crdify checks: scope; stored and served versions
dropped; fields removed; fields becoming required; type changes; defaults added, changed or
removed; enums added or values removed; bounds tightened; patterns and formats changed;
``x-kubernetes-validations`` rules added or changed; lists made ``set`` or ``map`` and
list-map keys changed, and ``x-kubernetes-preserve-unknown-fields`` removed; anything else
that changes is "unknown" and blocks. Descriptions, new optional fields, map types and
lists made ``atomic`` pass.

    verdict = compare(live_crd, packaged_crd)
    verdict.blocking, [c.message for c in verdict.blockers()], verdict.fields
    new_rules_only(live_schema, new_schema)  # what existing resources are checked against

No I/O; results are frozen dataclasses of JSON-shaped data.
"""

from lockwright.crdcompat.crd import (
    SUMMARY_PATHS,
    compare,
    compare_all,
    crd_changes,
    name_of,
    schema_of,
    served_pair_changes,
    versions_of,
)
from lockwright.crdcompat.model import BLOCKING, Change, FieldSummary, Kind, Report, Verdict
from lockwright.crdcompat.recheck import new_rules_only

__all__ = [
    "BLOCKING", "SUMMARY_PATHS", "Change", "FieldSummary", "Kind", "Report", "Verdict",
    "compare", "compare_all", "crd_changes", "name_of", "new_rules_only", "schema_of",
    "served_pair_changes", "versions_of",
]
