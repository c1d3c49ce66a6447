"""Hangar: a self-hosted control center where AI agents and people work together."""

__version__ = "0.2.0.dev0"
