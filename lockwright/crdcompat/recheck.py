"""The schema existing resources are checked against: the new one, less the CEL rules they
already passed.

The validator cannot evaluate ``x-kubernetes-validations`` and fails closed on a value a
rule would judge. A rule the live CRD already has at the same node was evaluated by the
API server when each resource was written, so only rules that are new (or whose text
changed) need to stand in the way: the others are left out of the schema the resources
are checked against (docs/design.md, "The upgrade gate's verdicts"). Pure; the inputs are
not changed.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]
RULES = "x-kubernetes-validations"
_NESTED = ("items", "additionalProperties", "not")
_LISTS = ("allOf", "anyOf", "oneOf")


def new_rules_only(old: Any, new: Any) -> Any:
    """``new`` without the ``x-kubernetes-validations`` rules ``old`` has at the same node.

    Args:
        old: the live version's ``openAPIV3Schema`` (or a node of it; anything else counts
            as a node with no rules).
        new: the new version's schema (or the matching node).

    Returns:
        A copy of ``new`` where only rules absent from ``old``'s node remain; a node left
        with no rules has no ``x-kubernetes-validations`` at all.
    """
    if not isinstance(new, dict):
        return new
    was = old if isinstance(old, dict) else {}
    out = {k: v for k, v in new.items() if k != RULES}
    kept = [r for r in new.get(RULES) or [] if not _passed(r, was.get(RULES))]
    if kept or (RULES in new and not isinstance(new[RULES], list)):
        out[RULES] = kept if isinstance(new[RULES], list) else new[RULES]
    if isinstance(new.get("properties"), dict):
        props = was.get("properties")
        known: dict[str, Any] = props if isinstance(props, dict) else {}
        out["properties"] = {k: new_rules_only(known.get(k), v)
                             for k, v in new["properties"].items()}
    for key in _NESTED:
        if isinstance(new.get(key), dict):
            out[key] = new_rules_only(was.get(key), new[key])
    for key in _LISTS:
        if isinstance(new.get(key), list):
            found = was.get(key)
            olds: list[Any] = found if isinstance(found, list) else []
            out[key] = [new_rules_only(olds[i] if i < len(olds) else None, v)
                        for i, v in enumerate(new[key])]
    return out


def _passed(rule: Any, rules: Any) -> bool:
    """Whether stored resources passed ``rule`` (an entry): the live node has the same
    ``rule`` text; or it is a transition rule (``oldSelf``), which judges updates only,
    never a stored resource as it is."""
    if not isinstance(rule, dict):
        return False
    text = str(rule.get("rule", ""))
    if "oldSelf" in text:
        return True
    return isinstance(rules, list) and any(
        isinstance(r, dict) and str(r.get("rule", "")) == text for r in rules)
