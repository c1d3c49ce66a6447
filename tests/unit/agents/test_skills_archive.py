"""A skill's bytes are hostile: unpacking refuses what would escape or exhaust, on both sides of every bound."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hangar.agents.skills import archive, index
from hangar.agents.skills.archive import MAX_FILE_BYTES, MAX_FILES, MAX_SKILL_BYTES, MAX_TOTAL_BYTES, unpack
from hangar.errors import InvalidArgs
from tests.unit.agents.skill_kits import digest, skill_md, tar_gz, zip_of

MD = skill_md("t")


def refused(data: bytes, kind: str = "archive") -> str:
    with pytest.raises(InvalidArgs) as exc:
        unpack(data, kind)
    return exc.value.message


@pytest.mark.parametrize("pack", [tar_gz, zip_of])
def test_names_that_escape_are_refused(pack: object) -> None:
    assert callable(pack)
    assert "absolute path" in refused(pack({"SKILL.md": MD, "/etc/cron.d/x": b"x"}))
    assert "climbs out" in refused(pack({"SKILL.md": MD, "../../x": b"x"}))
    assert "climbs out" in refused(pack({"SKILL.md": MD, "a/../../x": b"x"}))
    assert "backslash" in refused(pack({"SKILL.md": MD, "..\\x": b"x"}))
    assert "appears twice" in refused(pack({"SKILL.md": MD, "./SKILL.md": b"x"}))
    assert "lies under the file" in refused(pack({"SKILL.md": MD, "a": b"x", "a/b": b"y"}))


def test_links_and_special_files_are_refused() -> None:
    assert "is a symlink" in refused(tar_gz({"SKILL.md": MD}, links={"x": "/etc/passwd"}))
    assert "is a hard link" in refused(tar_gz({"SKILL.md": MD}, hard={"x": "SKILL.md"}))
    assert "not a file" in refused(tar_gz({"SKILL.md": MD}, fifo=("p",)))
    assert "is a symlink" in refused(zip_of({"SKILL.md": MD}, links={"x": "/etc/passwd"}))


@pytest.mark.parametrize("pack", [tar_gz, zip_of])
def test_member_count_bound(pack: object) -> None:
    assert callable(pack)
    files = {"SKILL.md": MD, **{f"f{i}": b"" for i in range(MAX_FILES - 1)}}
    assert len(unpack(pack(files), "archive")) == MAX_FILES
    files[f"f{MAX_FILES}"] = b""
    assert f"more than {MAX_FILES} members" in refused(pack(files))


@pytest.mark.parametrize("pack", [tar_gz, zip_of])
def test_file_size_bound(pack: object) -> None:
    assert callable(pack)
    assert len(unpack(pack({"SKILL.md": MD, "big": bytes(MAX_FILE_BYTES)}), "archive")["big"]) == MAX_FILE_BYTES
    assert f"larger than {MAX_FILE_BYTES} bytes" in refused(pack({"SKILL.md": MD, "big": bytes(MAX_FILE_BYTES + 1)}))


@pytest.mark.parametrize("pack", [tar_gz, zip_of])
def test_a_compression_bomb_is_read_only_up_to_the_cap(pack: object) -> None:
    """64 MiB of zeros packs into a few dozen KiB: reading stops one byte past the bound, the rest never unpacked."""
    assert callable(pack)
    bomb = pack({"SKILL.md": MD, "bomb": bytes(64 * 1024 * 1024)})
    assert len(bomb) < MAX_SKILL_BYTES // 8
    assert f"larger than {MAX_FILE_BYTES}" in refused(bomb)


@pytest.mark.parametrize("pack", [tar_gz, zip_of])
def test_total_size_bound(pack: object) -> None:
    assert callable(pack)
    n = MAX_TOTAL_BYTES // MAX_FILE_BYTES - 1
    files = {"SKILL.md": MD, **{f"f{i}": bytes(MAX_FILE_BYTES) for i in range(n)}}
    files["last"] = bytes(MAX_TOTAL_BYTES - sum(len(v) for v in files.values()))
    assert sum(len(v) for v in unpack(pack(files), "archive").values()) == MAX_TOTAL_BYTES
    files["one-more"] = b"x"
    assert f"more than {MAX_TOTAL_BYTES} bytes unpacked" in refused(pack(files))


def test_skill_size_bound() -> None:
    # A stored zip of incompressible bytes padded to exactly the bound is read; one byte more is refused unread.
    body = os.urandom(MAX_FILE_BYTES // 2)
    files = {"SKILL.md": MD, **{f"r{i}": body for i in range(7)}}
    base = zip_of({**files, "pad": b""}, stored=True)
    files["pad"] = os.urandom(MAX_SKILL_BYTES - len(base))
    exact = zip_of(files, stored=True)
    assert len(exact) == MAX_SKILL_BYTES
    assert len(unpack(exact, "archive")) == 9
    assert f"more than {MAX_SKILL_BYTES}" in refused(exact + b"\0")


def test_what_is_not_a_skill_is_refused() -> None:
    assert "neither a gzip-compressed tar nor a zip" in refused(b"#!/bin/sh\n")
    assert "not a readable gzip-compressed tar" in refused(b"\x1f\x8b" + os.urandom(100))
    assert "not a readable zip" in refused(b"PK\x03\x04" + os.urandom(100))
    assert "no SKILL.md at its root" in refused(tar_gz({"docs/SKILL.md": MD}))
    assert "not UTF-8 text" in refused(b"\xff\xfe\x00", "skill-md")
    assert "not 'wheel'" in refused(MD, "wheel")
    assert unpack(MD, "skill-md") == {"SKILL.md": MD}


def test_write_tree_lays_files_out_beneath_the_root(tmp_path: Path) -> None:
    files = unpack(tar_gz({"SKILL.md": MD, "./scripts/a.sh": b"echo\n"}), "archive")
    archive.write_tree(files, tmp_path)
    assert (tmp_path / "scripts" / "a.sh").read_bytes() == b"echo\n"
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == [
        "SKILL.md",
        "scripts/a.sh",
    ]


URL = "https://skills.example.test/.well-known/agent-skills/index.json"


def doc(**entry: object) -> bytes:
    base = {"name": "a", "type": "skill-md", "description": "d", "url": "a/SKILL.md", "digest": digest(b"x")}
    return json.dumps({"$schema": index.SCHEMA_0_2_0, "skills": [{**base, **entry}]}).encode()


def test_the_index_is_parsed_totally() -> None:
    (entry,) = index.parse(doc(), URL)
    assert entry.url == "https://skills.example.test/.well-known/agent-skills/a/SKILL.md"
    assert entry.digest == digest(b"x") and entry.kind == "skill-md"

    def bad(raw: bytes) -> str:
        with pytest.raises(InvalidArgs) as exc:
            index.parse(raw, URL)
        assert exc.value.field == "indexUrl"
        return exc.value.message

    assert "not JSON" in bad(b"{")
    assert "not a JSON object" in bad(b"[]")
    assert "$schema is None" in bad(b'{"skills": []}')
    assert "skills is not a list" in bad(json.dumps({"$schema": index.SCHEMA_0_2_0}).encode())
    assert "skills[0].digest 'md5:1' is not sha256" in bad(doc(digest="md5:1"))
    assert "skills[0].type 'wheel'" in bad(doc(type="wheel"))
    assert "skills[0].name 'A B'" in bad(doc(name="A B"))
    assert "skills[0].url 'file:///etc/passwd'" in bad(doc(url="file:///etc/passwd"))
    assert "skills[0].description is missing" in bad(doc(description=3))
    two = json.loads(doc())
    two["skills"].append(two["skills"][0])
    assert "listed twice" in bad(json.dumps(two).encode())


def test_the_index_bounds() -> None:
    many = {"$schema": index.SCHEMA_0_2_0, "skills": []}
    entry = json.loads(doc())["skills"][0]
    many["skills"] = [{**entry, "name": f"s{i}"} for i in range(index.MAX_ENTRIES)]
    assert len(index.parse(json.dumps(many).encode(), URL)) == index.MAX_ENTRIES
    many["skills"].append({**entry, "name": "one-more"})
    with pytest.raises(InvalidArgs, match=f"more than {index.MAX_ENTRIES}"):
        index.parse(json.dumps(many).encode(), URL)
    assert index.parse(doc(description="d" * index.MAX_DESCRIPTION), URL)[0].description == "d" * index.MAX_DESCRIPTION
    with pytest.raises(InvalidArgs, match=f"longer than {index.MAX_DESCRIPTION}"):
        index.parse(doc(description="d" * (index.MAX_DESCRIPTION + 1)), URL)


def test_the_sites_own_index_parses() -> None:
    from hangar.site.discovery import skills_index
    from hangar.site.slugs import SKILLS

    raw = json.dumps(skills_index(dict.fromkeys(SKILLS, b"x"), dict.fromkeys(SKILLS, "d"), "https://h.test")).encode()
    assert [e.name for e in index.parse(raw, "https://h.test/.well-known/agent-skills/index.json")] == list(SKILLS)
