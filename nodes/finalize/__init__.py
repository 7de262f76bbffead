"""Finalize: the final answer from every result, written in stages when needed, or the fallback report."""

from replangraph.nodes.finalize.finalizer import unresolved

__all__ = ["unresolved"]
