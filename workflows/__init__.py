"""workflows: see DESIGN.md."""
