"""Orchestration: a ticket split by a planner agent into a work DAG of sub-tickets, worked by agents in
dependency order behind per-node approvals, and synthesised into the ticket's deliverable (``service``). Its
built-in templates (``templates``), bodies (``bodies``), ops (``ops``) and events (``events``) are listed by the
agents part."""
