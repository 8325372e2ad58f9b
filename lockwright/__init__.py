"""lockwright: a package manager for Kubernetes control planes, driven by Temporal."""

__version__ = "0.1.0"
