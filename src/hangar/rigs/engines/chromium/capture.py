"""Engine A's pictures of the page: stills (``Page.captureScreenshot``) and the live view's screencast.

Stills are clipped to the viewport (or the whole document) and scaled in the engine to fit the caller's box,
never up, so a large page never crosses the socket at full size. A viewport still is the display the session
states (``innerWidth`` x ``innerHeight``), scroll bars included: the layout metrics' client sizes leave the scroll
bars out, so a page that scrolls would otherwise come back 15 px narrower (and shorter) than its display.

The screencast is pushed by Chromium on repaint; it sends the next frame only once the previous one is
acknowledged, and the acknowledgement goes out when the consumer asks for the next frame, so a slow consumer
slows the capture instead of queueing frames.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections.abc import AsyncGenerator, Awaitable, Callable

from hangar.errors import Refused, Unavailable
from hangar.rigs.engines.chromium.cdp import CdpConnection, Event, Json, Subscription
from hangar.rigs.engines.chromium.page import jpeg_size
from hangar.rigs.engines.session import Frame, Still

STILL_QUALITY = 80
FRAME_QUALITY = 70
FULL_PAGE_MAX_CSS = 16384  # Chromium cannot raster a taller surface in one capture

Call = Callable[[str, Json], Awaitable[Json]]


async def still(call: Call, full_page: bool, max_width: int, max_height: int, display: tuple[int, int]) -> Still:
    """``display`` is the viewport with its scroll bars (what ``viewport()`` states); a viewport still is that size
    before scaling."""
    metrics = await call("Page.getLayoutMetrics", {})
    if full_page:
        size = metrics["cssContentSize"]
        x, y, width, height = 0.0, 0.0, float(size["width"]), min(float(size["height"]), FULL_PAGE_MAX_CSS)
    else:
        view = metrics["cssVisualViewport"]
        x, y = float(view["pageX"]), float(view["pageY"])
        width, height = float(display[0]), float(display[1])
    scale = min(1.0, max_width / max(width, 1.0), max_height / max(height, 1.0))
    shot = await call("Page.captureScreenshot", {
        "format": "jpeg", "quality": STILL_QUALITY, "captureBeyondViewport": full_page,
        "clip": {"x": x, "y": y, "width": width, "height": height, "scale": scale}})  # fmt: skip
    data = base64.b64decode(shot["data"])
    image_width, image_height = jpeg_size(data)
    return Still("image/jpeg", data, image_width, image_height)


async def screencast(
    conn: CdpConnection, session_id: str, max_width: int, max_height: int, until: asyncio.Event | None = None
) -> AsyncGenerator[Frame, None]:
    """Frames until the consumer closes the iterator, which stops the screencast, or until ``until`` is set (the
    session moved to another page), which ends the iterator."""
    with conn.subscribe(("Page.screencastFrame",), session_id, limit=8) as events:
        start = {"format": "jpeg", "quality": FRAME_QUALITY, "maxWidth": max_width, "maxHeight": max_height}
        try:
            # Inside the try: a capture cancelled while its start is under way (a view resized twice at once) has
            # started in the engine all the same, and must be stopped, or every later start is refused.
            await conn.call("Page.startScreencast", start, session_id)
            while True:
                event = await _next(events, until)
                if event is None:
                    return
                received = time.monotonic()
                data = base64.b64decode(event.params["data"])
                width, height = jpeg_size(data)
                stamp = event.params.get("metadata", {}).get("timestamp")
                yield Frame(data, width, height, captured_at(stamp, received))
                await conn.call("Page.screencastFrameAck", {"sessionId": event.params["sessionId"]}, session_id)
        finally:
            if not conn.closed:
                with contextlib.suppress(Unavailable, Refused):
                    await conn.call("Page.stopScreencast", {}, session_id, 5.0)


async def _next(events: Subscription, until: asyncio.Event | None) -> Event | None:
    """The next frame event, or None once ``until`` is set first."""
    if until is None:
        return await events.get()
    if until.is_set():
        return None
    getting = asyncio.ensure_future(events.get())
    stopping = asyncio.ensure_future(until.wait())
    try:
        await asyncio.wait((getting, stopping), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        if not getting.done():
            getting.cancel()
    return getting.result() if getting.done() and not getting.cancelled() else None


def captured_at(stamp: object, received: float) -> float:
    """The frame's wall-clock swap time as a ``time.monotonic()`` instant. The engine shares this host's clock
    (an enclosure) or keeps it in step; a stamp in the future or older than a second (a clock apart) is not
    trusted and the receive time stands in."""
    if not isinstance(stamp, (int, float)):
        return received
    age = time.time() - float(stamp)
    return received - age if 0.0 <= age <= 1.0 else received
