"""Where a pipeline run's files live in the data directory: its working directory, shared by its shell steps
(mounted into their enclosure), and its control directory (driver lock, stop request, host script records; see
``hangar.core.runcontrol``), which lies outside the working directory so nothing the run's (confined) scripts
write can steer the driver or the host.
"""

from __future__ import annotations

from pathlib import Path

from hangar.core.datadir import DataDir
from hangar.core.paths import contained
from hangar.pipelines.filecheck import Folders


def pipeline_run_key(run_id: str) -> str:
    """The enclosure of one pipeline run, shared by its shell steps (``hangar.core.confine.Scope``)."""
    return f"pipelineRun:{run_id}"


CONTROL_DIR = ".control"  # under <dataDir>/pipelines/; run ids are generated, never this name


def run_dir(data_root: Path, run_id: str) -> Path:
    return contained(data_root / "pipelines", run_id, field="runId")


def control_root(data_root: Path) -> Path:
    """The directory of every run's control directory (``<controlRoot>/<runId>/``)."""
    return data_root / "pipelines" / CONTROL_DIR


def control_dir(data_root: Path, run_id: str) -> Path:
    return contained(control_root(data_root), run_id, field="runId")


def file_folders(data_root: Path, run_id: str, workspace_id: str) -> Folders:
    """Where the run's ``fileExists`` may look: its working directory, and its workspace's space folders and
    worktrees (a repo's ``repo_local_path``), never the rest of the workspace's folder (its database, clones and
    credentials) or of the host."""
    ws = DataDir(data_root).workspace_dir(workspace_id)
    return Folders(run_dir(data_root, run_id), (ws / "spaces", ws / "worktrees"))
