"""The packs rigs boot from: the terminal's CLI toolset, one browser pack per engine and the desktop.

A browser pack is keyed by the image (Debian stable), the engine, the audio revision ``audio-v1-<engine>`` and the
base revision every pack's name carries (``pack.BASE_REVISION``):
each engine gets its own pack, never shared, and the audio packages (PulseAudio and a transcoder) are part of
every browser pack so a page can play sound once a lane carries it. The home page is a local file baked into the
pack, so a fresh rig shows something without any egress.
"""

from __future__ import annotations

from importlib import resources

from hangar.errors import NotFound
from hangar.rigs.images.packrecipe import BASE_REVISION, PACKAGES, RELEASE, TERMINAL, PackRecipe
from hangar.rigs.model import ENGINE_LABELS

HOME_PAGE = "/usr/share/hangar/home.html"
HOME_URL = f"file://{HOME_PAGE}"
IMAGE = f"debian-{RELEASE}"

_BROWSER_BASE: tuple[str, ...] = (
    "bash", "ca-certificates", "socat", "python3", "procps", "iproute2", "fonts-liberation", "fonts-dejavu-core",
)  # fmt: skip
_AUDIO: tuple[str, ...] = ("pulseaudio", "ffmpeg")

# Per engine: the engine's own Debian packages. certutil (libnss3-tools) puts the dev-domain CA into the NSS
# databases engines A and B read; engine C (WebKitGTK) reads the system bundle and needs an X display.
_ENGINE_PACKAGES: dict[str, tuple[str, ...]] = {
    "engine-a": ("chromium", "libnss3-tools"),
    "engine-b": ("firefox-esr", "libnss3-tools"),
    "engine-c": ("webkit2gtk-driver", "libwebkit2gtk-4.1-0", "xvfb", "xauth"),
}


def audio_revision(engine: str) -> str:
    return f"audio-v1-{engine}"


def _home_page_hooks() -> tuple[str, ...]:
    source = resources.files("hangar.rigs.images") / "home" / "home.html"
    return (
        'mkdir -p "$1/usr/share/hangar"',
        f"upload {source} {HOME_PAGE}",
        f'chmod 0644 "$1{HOME_PAGE}"',
    )


def browser_recipe(engine: str) -> PackRecipe:
    try:
        packages = _ENGINE_PACKAGES[engine]
    except KeyError:
        raise NotFound(f"no browser pack for engine {engine!r}") from None
    revision = audio_revision(engine)
    return PackRecipe(
        name=f"browser-{engine}-{IMAGE}-{revision}-{BASE_REVISION}",
        revision=revision,
        surface="browser",
        label=f"{ENGINE_LABELS[engine]} browser image",
        packages=(*_BROWSER_BASE, *packages, *_AUDIO),
        hooks=_home_page_hooks(),
        engine=engine,
    )


BROWSERS: dict[str, PackRecipe] = {engine: browser_recipe(engine) for engine in _ENGINE_PACKAGES}

# The desktop (surface ``computer`` on the enclosure backend): the terminal's CLI baseline plus an X server
# without a screen that changes its mode through RandR (TigerVNC's Xvnc; Debian's Xvfb keeps its start size, and
# stays for programs that start a display of their own with xvfb-run), a lightweight window manager (Openbox), the
# input and selection tools the verbs run (xdotool over XTEST, xclip), xwd for stills, xrandr for mode changes, and
# xev and xterm for a person or a test to see what the desktop received. Keyed by its own revision, like every pack.
DESKTOP_REVISION = "desktop-v2"
_DESKTOP_PACKAGES: tuple[str, ...] = (
    "tigervnc-standalone-server", "xvfb", "xauth", "openbox", "xdotool", "xclip", "x11-utils", "x11-apps",
    "x11-xserver-utils", "xterm", "fonts-dejavu-core",
)  # fmt: skip
DESKTOP = PackRecipe(
    name=f"desktop-{IMAGE}-{DESKTOP_REVISION}-{BASE_REVISION}",
    revision=DESKTOP_REVISION,
    surface="computer",
    label="desktop image",
    packages=(*PACKAGES, *_DESKTOP_PACKAGES),
)
ALL: tuple[PackRecipe, ...] = (TERMINAL, *BROWSERS.values(), DESKTOP)


def recipe_named(name: str) -> PackRecipe:
    for recipe in ALL:
        if recipe.name == name:
            return recipe
    raise NotFound(f"no pack {name!r} (packs: {', '.join(r.name for r in ALL)})")
