"""Which backend a new rig runs on (pure: the caller hands in the KVM probe's verdict and the imported images).

- Without ``backend`` (or with ``enclosure``) every surface runs on the server's own backend: a full VM is never
  chosen automatically, neither ``fullvm-tcg`` (the spec: only when asked for) nor ``fullvm-kvm`` (it needs an image
  the server owner imported, and asking the probe would put its deadline in front of every desktop opened).
- ``fullvm-kvm`` and ``fullvm-tcg`` run computer rigs only, from an image imported under Settings, Server, Rigs and
  checked under that same backend (``ImportedImage.accelerator``), named by its id and looked up among the
  server's records (never a path): without ``imageId`` the newest such image. ``fullvm-kvm`` is refused with the
  probe's reason where the probe found KVM unusable (``rig.check_accelerator``).
- A space holds one computer rig: an open asking for another backend or another image than the live one's is a
  conflict (close it first); an open that asks for nothing in particular reuses whichever runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hangar.errors import Conflict, InvalidArgs, Unavailable
from hangar.rigs.backends.fullvm.imports import ImportedImage
from hangar.rigs.backends.fullvm.rig import check_accelerator
from hangar.rigs.backends.kvmprobe import KvmVerdict
from hangar.rigs.model import Surface

ENCLOSURE = "enclosure"
VM_BACKENDS = ("fullvm-kvm", "fullvm-tcg")
COMPUTER_BACKENDS = (ENCLOSURE, *VM_BACKENDS)


@dataclass(frozen=True)
class BackendChoice:
    backend: str | None  # a full VM's name; None: the surface's own backend (the enclosure, phones' adb)
    image_id: str | None = None  # the imported image a full VM boots

    @property
    def vm(self) -> bool:
        return self.backend in VM_BACKENDS


def asks_vm(backend: str | None) -> bool:
    return backend in VM_BACKENDS


def choose_backend(
    surface: Surface,
    backend: str | None,
    image_id: str | None,
    *,
    verdict: KvmVerdict | None,
    images: Sequence[ImportedImage],
) -> BackendChoice:
    """The backend ``rig.open`` asked for, checked; ``verdict`` matters for ``fullvm-kvm`` only and ``images`` for
    the full VMs only (the caller need not find either otherwise)."""
    if backend is None or backend == ENCLOSURE:
        if image_id is not None:
            raise InvalidArgs(
                "imageId names a full VM's image; ask for backend fullvm-kvm or fullvm-tcg with it (the enclosure "
                "boots its own pack)",
                field="imageId",
            )
        return BackendChoice(None)
    if backend not in VM_BACKENDS:
        allowed = ", ".join(COMPUTER_BACKENDS) if surface is Surface.computer else ENCLOSURE
        message = f"backend must be one of {allowed} for a {surface.value} rig, not {backend!r}"
        raise InvalidArgs(message, field="backend")
    if surface is not Surface.computer:
        raise InvalidArgs(
            f"surface must be computer for backend {backend} (a full VM is a desktop), not {surface.value}",
            field="surface",
        )
    check_accelerator(backend, verdict)
    if image_id is None:
        fitting = [i for i in images if i.accelerator == backend]  # newest first, as listed
        if not fitting:
            raise Unavailable(
                f"no desktop image is imported for {backend}: the server owner imports one under Settings, Server, "
                f"Rigs (rigs.importImage with backend {backend})"
            )
        return BackendChoice(backend, fitting[0].image_id)
    found = next((i for i in images if i.image_id == image_id), None)
    if found is None:
        raise InvalidArgs(f"imageId: no imported image {image_id!r} (rigs.images lists them)", field="imageId")
    if found.accelerator != backend:
        raise InvalidArgs(
            f"imageId: image {image_id} was imported and checked under {found.accelerator}, not {backend}; import it "
            f"for {backend} or ask for backend {found.accelerator}",
            field="imageId",
        )
    return BackendChoice(backend, image_id)


def check_reuse(live_backend: str, live_image: str | None, asked: str | None, asked_image: str | None) -> None:
    """An open of a space whose computer rig lives already reuses it unless it asked for something else:
    ``asked`` and ``asked_image`` are the ``backend`` and ``imageId`` the caller named (None: any)."""
    if asked is not None and asked != live_backend:
        raise Conflict(
            f"backend: this space's computer rig runs on {live_backend}, not {asked}; close it (rig_close) to open "
            f"one on {asked}"
        )
    if asked_image is not None and asked_image != live_image:
        raise Conflict(
            f"imageId: this space's computer rig runs {f'image {live_image}' if live_image else live_backend}, not "
            f"image {asked_image}; close it (rig_close) to open one from another image"
        )
