"""The file lane's pure parts: name checks, collision numbering, guest path decoding, streaming limits."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from hangar.errors import InvalidArgs
from hangar.rigs.errors import DropTooLarge
from hangar.rigs.lanes import files
from hangar.rigs.lanes.files import DropSpool, check_name, decode_path, numbered


def b64(path: str) -> str:
    return base64.urlsafe_b64encode(path.encode()).rstrip(b"=").decode()


@pytest.mark.parametrize("name", ["", ".", "..", "../x", "a/b", "..\\x", "a\x00b", "a\nb", "x" * 256])
def test_names_that_could_leave_drops_are_refused(name: str) -> None:
    with pytest.raises(InvalidArgs) as e:
        check_name(name, 3)
    assert e.value.field == "files[3].filename"


@pytest.mark.parametrize("name", ["report.pdf", ".env", "ünïcode name (1).txt", "..hidden", "a..b"])
def test_plain_names_pass_unchanged(name: str) -> None:
    assert check_name(name, 0) == name


def test_collisions_are_numbered_from_two() -> None:
    assert [numbered("name.ext", n) for n in (1, 2, 3)] == ["name.ext", "2-name.ext", "3-name.ext"]


def test_guest_paths_decode_from_base64url() -> None:
    assert decode_path(b64("/home/rig/drops/a.txt")) == "/home/rig/drops/a.txt"
    assert decode_path(b64("/home/rig//x/./y")) == "/home/rig/x/y"
    for bad in (None, "", "!!!", b64("relative/path"), b64("/home/rig/../../etc/passwd"), b64("/a\x00b")):
        with pytest.raises(InvalidArgs) as e:
            decode_path(bad)
        assert e.value.field == "p"


def _part(spool: DropSpool, filename: str | None, data: bytes, name: str = "file") -> None:
    disp = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename is not None else "")
    for field, value in (("Content-Disposition", disp),):
        spool.on_header_field(field.encode(), 0, len(field))
        spool.on_header_value(value.encode(), 0, len(value))
        spool.on_header_end()
    spool.on_headers_finished()
    spool.on_part_data(data, 0, len(data))
    spool.on_part_end()


def test_spool_writes_parts_to_disk_and_counts(tmp_path: Path) -> None:
    spool = DropSpool(tmp_path)
    _part(spool, "a.txt", b"hello")
    _part(spool, None, b"12", name="x")
    _part(spool, "b.bin", b"\x00" * 10)
    assert [(p.filename, p.size) for p in spool.files] == [("a.txt", 5), ("b.bin", 10)]
    assert spool.files[0].path is not None and spool.files[0].path.read_bytes() == b"hello"
    assert spool.total == 15
    spool.close()
    assert not tmp_path.exists()


def test_spool_refuses_the_65th_file(tmp_path: Path) -> None:
    spool = DropSpool(tmp_path)
    for i in range(64):
        _part(spool, f"f{i}", b"")
    with pytest.raises(DropTooLarge, match="64 files"):
        _part(spool, "f64", b"")
    spool.close()


def test_spool_enforces_per_file_and_per_drop_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Same code path with small limits, so the test does not write half a gigabyte.
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 100)
    monkeypatch.setattr(files, "MAX_DROP_BYTES", 150)
    spool = DropSpool(tmp_path / "one")
    (tmp_path / "one").mkdir()
    with pytest.raises(DropTooLarge, match="per-file"):
        _part(spool, "big", b"x" * 101)
    spool.close()
    spool = DropSpool(tmp_path / "two")
    (tmp_path / "two").mkdir()
    _part(spool, "a", b"x" * 100)
    with pytest.raises(DropTooLarge, match="per-drop"):
        _part(spool, "b", b"x" * 51)
    spool.close()
    assert DropTooLarge.http_status == 413


def test_spool_refuses_traversal_in_a_part_name(tmp_path: Path) -> None:
    spool = DropSpool(tmp_path)
    with pytest.raises(InvalidArgs) as e:
        _part(spool, "../../etc/cron.d/x", b"boom")
    assert e.value.field == "files[0].filename"
    assert list(tmp_path.iterdir()) == []
    spool.close()


def test_rfc5987_file_names_are_decoded_and_still_checked(tmp_path: Path) -> None:
    spool = DropSpool(tmp_path)
    disp = "form-data; name=\"file\"; filename*=UTF-8''%C3%BCber%20plan.txt"
    spool.on_header_field(b"Content-Disposition", 0, 19)
    spool.on_header_value(disp.encode(), 0, len(disp))
    spool.on_header_end()
    spool.on_headers_finished()
    assert spool.files[0].filename == "über plan.txt"
    spool.on_part_end()
    bad = "form-data; name=\"file\"; filename*=UTF-8''..%2F..%2Fetc%2Fpasswd"
    spool.on_header_field(b"Content-Disposition", 0, 19)
    spool.on_header_value(bad.encode(), 0, len(bad))
    spool.on_header_end()
    with pytest.raises(InvalidArgs):
        spool.on_headers_finished()
    spool.close()
