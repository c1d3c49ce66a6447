"""Where a pipeline run's files live in the data directory: its working directory, shared by its shell steps
(mounted into their enclosure), and its control directory (driver lock, stop request, host script records; see
``hangar.core.runcontrol``), which lies outside the working directory so nothing the run's (confined) scripts
write can steer the driver or the host.
"""

from __future__ import annotations

from pathlib import Path

from hangar.core.datadir import DataDir
from hangar.core.paths import contained

CONTROL_DIR = ".control"  # under <dataDir>/pipelines/; run ids are generated, never this name


def run_dir(data_root: Path, run_id: str) -> Path:
    return contained(data_root / "pipelines", run_id, field="runId")


def control_root(data_root: Path) -> Path:
    """The directory of every run's control directory (``<controlRoot>/<runId>/``)."""
    return data_root / "pipelines" / CONTROL_DIR


def control_dir(data_root: Path, run_id: str) -> Path:
    return contained(control_root(data_root), run_id, field="runId")


def workspace_folder(data_root: Path, workspace_id: str) -> Path:
    """The run's workspace's folder (its spaces and worktrees): where ``fileExists`` may look besides the run's
    working directory."""
    return DataDir(data_root).workspace_dir(workspace_id)
