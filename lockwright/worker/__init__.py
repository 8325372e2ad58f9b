"""worker: see DESIGN.md."""
