"""Packaged CRD YAMLs; read them through :func:`lockwright.k8s.crds.load_crds`."""
