"""Crossplane v2's managed resource definitions: CRD → MRD conversion, activation policies.

- :mod:`lockwright.managed.convert`: which of a Provider's CRDs become
  ``ManagedResourceDefinition`` objects, and in which state;
- :mod:`lockwright.managed.match`: Go's ``filepath.Match``, as policies match MRD names;
- :mod:`lockwright.managed.policy`: what a set of activation policies activates, and the
  status each policy and each MRD should show.
"""
