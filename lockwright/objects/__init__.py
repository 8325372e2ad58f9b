"""A package's objects in the cluster: establishing them, webhooks, CRD checks, the Lock's claims."""
