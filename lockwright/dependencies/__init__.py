"""Dependencies: the package graph, the resolver's search, why it found none, the Lock's status."""
