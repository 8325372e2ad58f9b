"""The xpkg package format: metadata, version constraints, parsing, linting and building.

Pure code: no network, no Kubernetes, no Temporal. The OCI side lives in ``lockwright.oci``.
"""
