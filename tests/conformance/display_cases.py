"""A conformance case shared by the three engines: a viewport still is exactly the display the session states
(``viewport()``), scroll bars included, read from the image's own header and as a decoder sees it, on a page
that scrolls both ways and is scrolled. Scaled to fit a smaller box, it keeps the display's shape.

A still narrower than its display (an engine that clips to the layout viewport less its scroll bar) would put
every coordinate an agent reads off the picture a few pixels away from where its click lands."""

from __future__ import annotations

from hangar.rigs.engines.pixels import fit, image_size
from hangar.rigs.engines.session import EngineSession
from tests.support.images import decoded_size
from tests.support.pages import PageServer

# Displays to try: the boot one, a smaller one, and one larger than the agent box (so the still is scaled).
DISPLAYS = ((1280, 800), (1024, 700), (1920, 1200))
AGENT_BOX = (1280, 800)


async def check_stills_match_the_display(session: EngineSession, pages: PageServer) -> None:
    before = await session.viewport()
    try:
        for display in DISPLAYS:
            await session.set_viewport(*display)
            await session.navigate(pages.url("/scrollbars.html"))
            await session.scroll(200, 200, 400, 600)  # both scroll bars showing, the page moved under them
            assert await session.viewport() == display
            full = await session.screenshot(False, 8000, 8000)
            assert (full.width, full.height) == display == image_size(full.data) == decoded_size(full.data), (
                f"a {display[0]}x{display[1]} display came back as {full.width}x{full.height}"
            )
            boxed = await session.screenshot(False, *AGENT_BOX)
            expected = fit(*display, *AGENT_BOX)
            assert (boxed.width, boxed.height) == expected == image_size(boxed.data) == decoded_size(boxed.data), (
                f"a {display[0]}x{display[1]} display fitted into {AGENT_BOX} came back as {boxed.width}x{boxed.height}"
            )
    finally:
        await session.set_viewport(*before)
