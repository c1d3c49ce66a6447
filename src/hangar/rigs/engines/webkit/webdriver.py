"""A small classic W3C WebDriver client (https://w3c.github.io/webdriver/) over ``httpx``, for engine C.

One session per driver: ``start`` creates it, ``command`` sends ``METHOD /session/{id}/<path>`` and returns the
answer's ``value``, ``close`` deletes it. Error answers carry W3C codes, translated by ``w3c.errors``; a
driver that cannot be reached is ``Unavailable``, one that does not answer in time ``EngineTimeout``.
"""

from __future__ import annotations

from typing import Any

import httpx

from hangar.errors import Unavailable
from hangar.rigs.engines.launch import Endpoint
from hangar.rigs.engines.w3c.errors import EngineTimeout, w3c_error

ELEMENT_KEY = "element-6066-11e4-a52e-4f735466cecf"  # how classic WebDriver names an element in JSON


class WebDriverClient:
    def __init__(self, endpoint: Endpoint) -> None:
        self._http = httpx.AsyncClient(
            base_url=f"http://{endpoint.host}:{endpoint.port}",
            headers={"Host": endpoint.authority},
            timeout=httpx.Timeout(30.0),
            trust_env=False,  # never through a proxy from the environment
        )
        self._session: str | None = None

    async def _request(self, method: str, path: str, body: object, timeout_s: float, what: str) -> Any:
        try:
            response = await self._http.request(
                method, path, json=body if method == "POST" else None, timeout=timeout_s
            )
        except httpx.TimeoutException:
            raise EngineTimeout(f"{what} got no answer in {timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            raise Unavailable(f"{what}: cannot reach the WebDriver: {exc}") from exc
        try:
            payload = response.json()
        except ValueError:
            raise Unavailable(f"{what}: the WebDriver answered HTTP {response.status_code} without JSON") from None
        value = payload.get("value") if isinstance(payload, dict) else None
        if response.status_code >= 400:  # only the status says error: a page script may return {"error": ...}
            error = value if isinstance(value, dict) else {}
            raise w3c_error(str(error.get("error", "unknown error")), str(error.get("message", "")), what)
        return value

    async def start(self, capabilities: dict[str, Any], timeout_s: float = 60.0) -> dict[str, Any]:
        value = await self._request(
            "POST", "/session", {"capabilities": {"alwaysMatch": capabilities}}, timeout_s, "new session"
        )
        if not isinstance(value, dict) or not isinstance(value.get("sessionId"), str):
            raise Unavailable("new session: the WebDriver answered without a session id")
        self._session = value["sessionId"]
        caps = value.get("capabilities")
        return caps if isinstance(caps, dict) else {}

    async def command(self, method: str, path: str, body: object = None, timeout_s: float = 30.0) -> Any:
        if self._session is None:
            raise Unavailable(f"{path}: the WebDriver session is closed")
        return await self._request(
            method, f"/session/{self._session}{path}", {} if body is None else body, timeout_s, path.lstrip("/")
        )

    async def close(self) -> None:
        session, self._session = self._session, None
        try:
            if session is not None:
                await self._request("DELETE", f"/session/{session}", None, 10.0, "delete session")
        except Unavailable:
            pass  # the driver is going away anyway
        finally:
            await self._http.aclose()
