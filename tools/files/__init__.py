"""Workspace file tools: read, write and list files confined to one folder."""

from replangraph.tools.files.workspace_files import resolve_inside, workspace_tools

__all__ = ["resolve_inside", "workspace_tools"]
