"""Dependency resolution: the graph, the search for a solution, why there is none, the Lock's status."""
