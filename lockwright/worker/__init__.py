"""worker: see docs/design.md."""
