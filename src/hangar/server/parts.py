"""The parts this server is composed of, in start order. Adding a part is one line here."""

from __future__ import annotations

from collections.abc import Sequence

from hangar.core.part import Part, StepBody, kernel_part


def all_parts() -> list[Part]:
    # Imports stay inside so that importing this module has no side effects and no cycles.
    from hangar.agents.part import AGENTS_PART
    from hangar.backup.export import TRANSFER_PART
    from hangar.backup.part import BACKUP_PART
    from hangar.chat.part import CHAT_PART
    from hangar.codegraph.part import CODEGRAPH_PART
    from hangar.forges.part import FORGES_PART
    from hangar.identity.part import IDENTITY_PART
    from hangar.meetings.part import MEETINGS_PART
    from hangar.oauth.part import OAUTH_PART
    from hangar.oversight import OVERSIGHT_PART
    from hangar.pipelines.part import make_pipelines_part
    from hangar.retention import RETENTION_PART
    from hangar.rigs.part import RIGS_PART
    from hangar.server.deletion.part import DELETION_PART
    from hangar.sso.part import SSO_PART
    from hangar.workspace.part import WORKSPACE_PART

    others = [
        kernel_part(),
        OVERSIGHT_PART,
        IDENTITY_PART,
        SSO_PART,
        OAUTH_PART,
        WORKSPACE_PART,
        AGENTS_PART,
        CHAT_PART,
        RIGS_PART,
        FORGES_PART,
        CODEGRAPH_PART,
        MEETINGS_PART,
        BACKUP_PART,
        TRANSFER_PART,
        RETENTION_PART,
    ]
    # After them: resuming runs at start may run bodies that use the services the parts above provide (the runs of
    # a workspace being deleted are not resumed: its record went in the deletion's first step).
    pipelines = make_pipelines_part(bodies=step_bodies(others))
    # Last: a deletion a stopped process left half done is finished at start with every part running, the
    # pipelines' engine included, so the runs of the workspace that another process drives are cancelled too.
    return [*others, pipelines, DELETION_PART]


def worker_parts() -> list[Part]:
    """What a ``hangar worker`` runs: the settings, the confinement, the pipelines' tables and bodies, the
    agents' services its agent steps drive runs with, the code graph and the meetings (for their bodies), and none
    of the parts that hold connections (chat), close other processes' records at start (rigs, agent runs) or do a
    server's periodic work (backups, retention)."""
    from hangar.agents.part import AGENTS_WORKER_PART
    from hangar.codegraph.part import CODEGRAPH_PART
    from hangar.identity.part import IDENTITY_PART
    from hangar.meetings.part import MEETINGS_WORKER_PART
    from hangar.oversight import OVERSIGHT_PART
    from hangar.pipelines.part import PIPELINES_CLI_PART
    from hangar.rigs.part import RIGS_CONFINEMENT_PART
    from hangar.workspace.part import WORKSPACE_PART

    return [
        kernel_part(),
        OVERSIGHT_PART,
        IDENTITY_PART,
        WORKSPACE_PART,
        RIGS_CONFINEMENT_PART,
        AGENTS_WORKER_PART,
        CODEGRAPH_PART,
        MEETINGS_WORKER_PART,
        PIPELINES_CLI_PART,
    ]


def step_bodies(parts: Sequence[Part]) -> list[StepBody]:
    """Every pipeline step body the parts contribute."""
    return [b for p in parts for b in p.bodies]
