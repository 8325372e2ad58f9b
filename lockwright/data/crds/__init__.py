"""Packaged CRD YAMLs; read them through :func:`lockwright.crds.load_crds`."""
