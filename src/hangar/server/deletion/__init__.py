"""Deleting a workspace (``workspaces.delete``): see ``steps`` for how, ``ops`` for who may."""
