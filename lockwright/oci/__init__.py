"""OCI registry access for xpkg packages: references, the client, fetch, push and cache.

The install activities call :func:`lockwright.oci.fetch.fetch_package`; the CLI wraps the
same functions. Nothing here imports Temporal.
"""
