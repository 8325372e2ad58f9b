"""devcluster: a Kubernetes-API-compatible server for development and tests.

One process that speaks the Kubernetes REST protocol faithfully enough that the official
``kubernetes`` Python client and ``kubectl`` work against it unmodified. Deployments are
never run; their status is simulated (like KWOK). Product code never special-cases it.
"""
