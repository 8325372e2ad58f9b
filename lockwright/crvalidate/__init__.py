"""Local validation of custom resources against a CRD version's structural schema.

``validate(obj, schema)`` answers what the Kubernetes API server would answer for the
object (pruning unknown fields rather than rejecting them, defaulting, then validating
types, required fields, enums, bounds, patterns, formats, nullable, int-or-string,
preserve-unknown-fields, additionalProperties, items, list types and embedded resources),
with the first violations and their field paths. What cannot be checked locally, CEL rules
above all, makes the verdict ``cannot-check``, on which the caller fails closed.

No I/O; results are frozen dataclasses of JSON-shaped data.
"""

from lockwright.crvalidate.validate import (
    CANNOT_CHECK,
    INVALID,
    LIMIT,
    VALID,
    Validation,
    Violation,
    validate,
)

__all__ = ["CANNOT_CHECK", "INVALID", "LIMIT", "VALID", "Validation", "Violation", "validate"]
