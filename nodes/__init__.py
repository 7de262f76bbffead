"""The graph's nodes, one per module."""
