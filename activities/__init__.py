"""activities: see DESIGN.md."""
