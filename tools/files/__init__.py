"""Workspace file tools: read, write and list files confined to one folder."""
