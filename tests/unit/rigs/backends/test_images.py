from __future__ import annotations

import logging

import pytest

from hangar.errors import InvalidArgs
from hangar.rigs.images.settings import EXEC_IMAGE_KEY, boot_image, validate_image_ref

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("ubuntu:24.04", "docker.io/library/ubuntu:24.04"),
        ("ghcr.io/acme/tools:1.2", "ghcr.io/acme/tools:1.2"),
        (f"registry.example.com:5000/team/img@{DIGEST}", f"registry.example.com:5000/team/img@{DIGEST}"),
        (f"debian:bookworm@{DIGEST}", f"docker.io/library/debian:bookworm@{DIGEST}"),
        ("localhost:5000/x", "localhost:5000/x"),
    ],
)
def test_registry_references_parse(value: str, expected: str) -> None:
    assert str(validate_image_ref(value)) == expected


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("--privileged", "flag"),
        ("-v/:/host", "flag"),
        ("/var/lib/images/x.qcow2", "local paths"),
        ("./image", "local paths"),
        ("~/img", "local paths"),
        ("../x", "local paths"),
        ("image.tar", "archives"),
        ("ghcr.io/acme/tools.tar.gz", "archives"),
        ("disk.qcow2", "archives"),
        ("docker-archive:/tmp/x.tar", "URLs, archives"),
        ("file:///etc/passwd", "URLs"),
        ("https://example.com/x", "URLs"),
        ("Ubuntu:24.04", "lower-case"),
        ("ubuntu:24.04 --rm", "whitespace"),
        ("ubuntu@sha256:abc", "digest"),
        ("", "non-empty"),
    ],
)
def test_non_references_are_refused_naming_the_field(value: str, why: str) -> None:
    with pytest.raises(InvalidArgs) as err:
        validate_image_ref(value)
    assert err.value.field == EXEC_IMAGE_KEY
    assert why in err.value.message


def test_egress_hosts_include_cdn_companions() -> None:
    assert validate_image_ref("ubuntu").egress_hosts >= {"docker.io", "production.cloudflare.docker.com"}
    assert validate_image_ref("ghcr.io/a/b").egress_hosts == {"ghcr.io", "pkg-containers.githubusercontent.com"}


def test_invalid_stored_value_is_ignored_loudly_at_boot(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="hangar.rigs.images.settings"):
        assert boot_image("/srv/evil.tar") is None
    assert "IGNORING invalid rigs.microvm.execImage" in caplog.text
    assert boot_image(None) is None
    ref = boot_image("ghcr.io/acme/tools:1")
    assert ref is not None and ref.registry == "ghcr.io"
