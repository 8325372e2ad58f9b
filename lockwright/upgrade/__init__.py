"""Upgrades: the switch decision (which revision runs), the gate and the plan of an upgrade."""
