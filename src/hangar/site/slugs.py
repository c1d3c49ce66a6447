"""The fixed set of published page slugs: the manual's slug set of the spec, the compared tools, the skills.

Everything the site publishes is derived from these tuples; a path outside them is a real 404.
"""

from __future__ import annotations

MANUAL_ROOTS: tuple[str, ...] = (
    "manual",
    "manual/install",
    "manual/quick-start",
    "manual/concepts",
    "manual/guides",
    "manual/reference",
    "manual/tutorials",
)

CONCEPTS: tuple[str, ...] = (
    "agent-model", "ai-review", "architecture", "authorization", "calendar", "chat-bridges",
    "code-intelligence", "conversation-history", "deployment", "dispatch-lifecycle", "domain-events",
    "evals-replay", "guardrails", "meetings", "memory-knowledge", "modes", "multiplayer", "orchestration",
    "pipelines", "pr-conversations", "remote-control", "rigs", "sandbox-security", "sso", "tickets",
    "tool-context", "workspaces",
)  # fmt: skip

GUIDES: tuple[str, ...] = (
    "adapters", "add-repos", "agent-diagnostics", "ai-review", "api-keys", "back-up-and-restore",
    "branch-a-conversation", "build-team", "chat-with-agent", "code-search", "configure-guardrails",
    "connect-calendar", "connect-forges", "connect-remote-server", "create-agent", "create-pipeline",
    "customize-chat-bot", "debug-a-failing-test", "delegate-tickets", "direct-background-workers",
    "dispatch-reviewers", "explore-data-in-a-kernel", "focus-mode", "forge-app", "forge-integration",
    "forge-pr-conversations", "tracker-integration", "link-chat-account", "manage-costs", "manage-memory",
    "manage-skills", "manage-tickets", "mcp-server", "mention-agents", "monitor-pipelines", "newsfeed",
    "notifications", "pair-a-device", "parallel-agents", "pipeline-triggers", "plan-mode", "plan-studio",
    "projects", "record-meeting", "repo-scripts", "review-merge-pr", "review-studio", "run-fleet-worker",
    "run-headless-server", "run-orchestration", "run-pipeline", "sandbox-policies",
    "chatprovider-integration", "spaces", "sso-oidc", "sso-scim", "structural-refactor", "triage-inbox",
    "tune-tool-context", "use-rigs", "vm-ports",
)  # fmt: skip

# The spec's reference pages, and the pipeline template format's own (the document the editor, the ops and
# `hangar pipeline` read).
REFERENCE: tuple[str, ...] = (
    "agent-configuration", "agent-tools", "backup", "server-cli", "chat-bridge", "domain-events", "glossary",
    "keyboard-shortcuts", "mcp-tools", "pipeline-steps", "pipeline-templates", "rigs", "route-map",
    "sandbox-backends", "slash-commands", "sso", "ticket-lifecycle",
)  # fmt: skip

TUTORIALS: tuple[str, ...] = (
    "first-agent", "first-chat-bridge", "first-pipeline", "first-pr", "first-workspace", "sso",
)  # fmt: skip

MANUAL_SECTIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("tutorials", "Tutorials", TUTORIALS),
    ("guides", "Guides", GUIDES),
    ("concepts", "Concepts", CONCEPTS),
    ("reference", "Reference", REFERENCE),
)

# The projects people most often weigh Hangar against: agent frameworks, agent platforms, workflow engines
# and agent sandboxes.
COMPARE_TOOLS: tuple[str, ...] = (
    "langgraph", "crewai", "autogen", "openhands", "dify", "n8n", "temporal", "e2b", "daytona",
)  # fmt: skip

TOP_PAGES: tuple[str, ...] = ("", "about", "contact", "developers", "changelog", "compare")

SKILLS: tuple[str, ...] = ("site-agent-access", "product-mcp-tools", "product-self-hosting")


def manual_slugs() -> tuple[str, ...]:
    """Every manual slug of the spec's fixed set, roots first."""
    out = list(MANUAL_ROOTS)
    for key, _label, slugs in MANUAL_SECTIONS:
        out.extend(f"manual/{key}/{s}" for s in slugs)
    return tuple(out)


def page_slugs() -> tuple[str, ...]:
    """Every content page slug; ``""`` is the landing page."""
    return (*TOP_PAGES, *(f"compare/{t}" for t in COMPARE_TOOLS), *manual_slugs())


def path_of(slug: str) -> str:
    return "/" + slug


def twin_path_of(slug: str) -> str:
    """The ``.md`` twin of a page: ``/index.md`` for the landing page."""
    return "/index.md" if slug == "" else f"/{slug}.md"
