"""Core services every part stands on: clock, ids, data directory, databases, secrets, events, audit."""
