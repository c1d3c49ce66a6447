"""What no guest path may be, refused before the rig is asked."""

from __future__ import annotations

import pytest

from hangar.errors import InvalidArgs, Refused
from hangar.rigs.backends.enclosure import fs


def test_absolute_paths_split_into_components() -> None:
    assert fs.split_guest_path("/home/rig/./drops//日本語.txt") == ["home", "rig", "drops", "日本語.txt"]


@pytest.mark.parametrize(("path", "error"), [
    ("/home/../../outside.txt", Refused),
    ("home/rig/x", InvalidArgs),
    ("/", InvalidArgs),
    ("/home/rig/a\x00b", InvalidArgs),
])  # fmt: skip
def test_what_no_guest_path_may_be(path: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        fs.split_guest_path(path)
