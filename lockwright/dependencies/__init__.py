"""Dependencies: the package graph, the resolver's search for a solution, why there is none, the Lock's status."""
