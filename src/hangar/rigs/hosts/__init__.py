"""Rig hosts: ``hangar rig-host`` processes on other machines that run rigs for this server (``wire``: the socket
between them; ``registry``: placement and loss; ``remote``: a rig there as the manager sees it; ``agent``: the rig
host's own side)."""
