"""Which backend ``rig.open`` runs a rig on (``backendchoice``, pure): a full VM only when asked for, for a computer,
from an image imported for that same backend (by id among the records, else the newest), fullvm-kvm only where the
KVM probe found KVM usable; a space's live computer rig is reused unless the open asked for something else."""

from __future__ import annotations

import pytest

from hangar.errors import Conflict, InvalidArgs, Unavailable
from hangar.rigs.backends.fullvm.imports import ImportedImage
from hangar.rigs.backends.kvmprobe import KvmVerdict
from hangar.rigs.lifecycle.backendchoice import BackendChoice, check_reuse, choose_backend
from hangar.rigs.model import Surface

HUNG = KvmVerdict(False, "a tiny guest did not finish booting under KVM within 10 s", 10.0)
WORKS = KvmVerdict(True, None, 0.2)


def image(image_id: str, accelerator: str) -> ImportedImage:
    return ImportedImage(image_id, "desktop", "0" * 64, 1, 1, "2026-01-01T00:00:00Z", accelerator, 1.0)


# Newest first, as ``list_images`` gives them.
IMAGES = [image("img-tcg-new", "fullvm-tcg"), image("img-kvm", "fullvm-kvm"), image("img-tcg-old", "fullvm-tcg")]


def choose(
    surface: Surface, backend: str | None, image_id: str | None = None, verdict: KvmVerdict | None = None
) -> BackendChoice:
    return choose_backend(surface, backend, image_id, verdict=verdict, images=IMAGES)


def test_without_a_backend_nothing_is_a_vm_whatever_kvm_and_the_images_say() -> None:
    for surface in Surface:
        assert choose(surface, None, verdict=WORKS) == BackendChoice(None)
    assert choose(Surface.computer, "enclosure") == BackendChoice(None)
    assert not BackendChoice(None).vm


def test_a_vm_asked_for_boots_the_image_named_or_the_newest_imported_for_its_backend() -> None:
    assert choose(Surface.computer, "fullvm-tcg") == BackendChoice("fullvm-tcg", "img-tcg-new")
    assert choose(Surface.computer, "fullvm-tcg", "img-tcg-old") == BackendChoice("fullvm-tcg", "img-tcg-old")
    assert choose(Surface.computer, "fullvm-kvm", verdict=WORKS) == BackendChoice("fullvm-kvm", "img-kvm")
    assert choose(Surface.computer, "fullvm-tcg").vm


def test_fullvm_kvm_is_refused_with_the_probes_reason_where_kvm_is_unusable() -> None:
    for verdict in (HUNG, None):
        with pytest.raises(Unavailable) as refused:
            choose(Surface.computer, "fullvm-kvm", "img-kvm", verdict)
        assert "fullvm-kvm cannot run on this host" in refused.value.message
    with pytest.raises(Unavailable, match="within 10 s"):
        choose(Surface.computer, "fullvm-kvm", verdict=HUNG)
    assert choose(Surface.computer, "fullvm-tcg", verdict=HUNG).backend == "fullvm-tcg"  # TCG asks nothing of KVM


def test_bad_input_is_refused_naming_its_field() -> None:
    cases = [
        ((Surface.computer, "fullvm-tcg", "img-nope"), "imageId", "no imported image"),
        ((Surface.computer, "fullvm-tcg", "../../etc/passwd"), "imageId", "no imported image"),
        ((Surface.computer, "fullvm-tcg", "img-kvm"), "imageId", "imported and checked under fullvm-kvm"),
        ((Surface.computer, "fullvm-kvm", "img-tcg-new", WORKS), "imageId", "not fullvm-kvm"),
        ((Surface.terminal, "fullvm-tcg"), "surface", "surface must be computer"),
        ((Surface.browser, "fullvm-kvm", None, WORKS), "surface", "surface must be computer"),
        ((Surface.computer, "fullvm-hvf"), "backend", "backend must be one of enclosure, fullvm-kvm, fullvm-tcg"),
        ((Surface.terminal, "microvm"), "backend", "backend must be one of enclosure for a terminal rig"),
        ((Surface.computer, None, "img-tcg-new"), "imageId", "imageId names a full VM's image"),
        ((Surface.computer, "enclosure", "img-tcg-new"), "imageId", "imageId names a full VM's image"),
    ]
    for args, field, words in cases:
        with pytest.raises(InvalidArgs) as bad:
            choose(*args)
        assert bad.value.field == field and bad.value.message.startswith(field) and words in bad.value.message, args


def test_no_image_imported_for_the_backend_is_said() -> None:
    with pytest.raises(Unavailable, match="no desktop image is imported for fullvm-tcg"):
        choose_backend(Surface.computer, "fullvm-tcg", None, verdict=None, images=[image("img-kvm", "fullvm-kvm")])


def test_a_live_computer_rig_is_reused_unless_the_open_asked_for_another() -> None:
    check_reuse("fullvm-tcg", "img-a", None, None)  # asked for nothing in particular
    check_reuse("enclosure", None, None, None)
    check_reuse("fullvm-tcg", "img-a", "fullvm-tcg", None)
    check_reuse("fullvm-tcg", "img-a", "fullvm-tcg", "img-a")
    with pytest.raises(Conflict, match=r"^backend: this space's computer rig runs on enclosure, not fullvm-tcg"):
        check_reuse("enclosure", None, "fullvm-tcg", "img-a")
    with pytest.raises(Conflict, match=r"^backend: .* runs on fullvm-tcg, not enclosure"):
        check_reuse("fullvm-tcg", "img-a", "enclosure", None)
    with pytest.raises(Conflict, match=r"^imageId: .* runs image img-a, not image img-b"):
        check_reuse("fullvm-tcg", "img-a", "fullvm-tcg", "img-b")
