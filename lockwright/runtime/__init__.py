"""A package's runtime: Deployment, Service and ServiceAccount manifests, RBAC rules, TLS."""
