"""Upgrades: the activation decision and the plan of an upgrade."""
