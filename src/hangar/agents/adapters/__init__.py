"""Agent adapters: how a run reaches a model (``openai``) or a program (``command``)."""
