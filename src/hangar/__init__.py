"""Hangar: a self-hosted control center where AI agents and people work together."""

__version__ = "0.0.1"
