"""Fill a new data directory with representative records through a released Hangar's own server and RPC ops.

Run by ``build.py`` with the release's own Python (its virtualenv, where ``hangar``, ``websockets`` and ``httpx``
are that release's): ``populate.py HANGAR DATA_DIR MANIFEST``. It starts ``HANGAR serve`` on the directory, makes
the records below as a user would (the owner's credential from ``hangar admin owner-token``, a member through an
invite code redeemed at ``/auth/pair``), stops the server, and writes MANIFEST: what it made, with the ids and the
credentials the upgrade tests use to read the records back.

Records: the server owner and a member (each with a device credential), a workspace, two spaces with messages by
both, a pipeline template and a finished run of it, and, where the release has a chat bridge, the workspace's
chat credentials (Slack token shapes; no connection is made).

Only what every release since the first offers is used here; an op a release lacks is left out and the manifest
says so (``chat`` is null).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import websockets

TEMPLATE = {
    "id": "fixture-route",
    "steps": [
        {"id": "start", "kind": "trigger"},
        {
            "id": "route",
            "kind": "listen",
            "body": "flow.router",
            "trigger": {"sourceStepIds": ["start"]},
            "config": {"extras": {"switchKey": "color", "cases": ["red"], "default": "go"}},
        },
    ],
}
MESSAGES = {
    "general": ["Welcome to the fixture workspace.", "A second message, by the owner."],
    "release-notes": ["Notes for the release."],
}
MEMBER_MESSAGE = "A message by the member."
SLACK_CREDENTIALS = {"botToken": "xoxb-0000-fixture-bot", "appToken": "xapp-1-FIXTURE-app"}


class Rpc:
    def __init__(self, url: str, token: str) -> None:
        self.url, self.token, self.n = url, token, 0

    async def __aenter__(self) -> Rpc:
        self.ws = await websockets.connect(self.url, additional_headers={"Authorization": f"Bearer {self.token}"})
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.ws.close()

    async def call(self, op: str, **args: Any) -> Any:
        self.n += 1
        await self.ws.send(json.dumps({"id": self.n, "op": op, "args": args}))
        while True:
            frame = json.loads(await asyncio.wait_for(self.ws.recv(), 60))
            if frame.get("id") == self.n and "event" not in frame:
                break
        if not frame.get("ok"):
            raise RuntimeError(f"{op}: {frame['error']}")
        return frame["result"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(hangar: str, data_dir: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HANGAR_DATA_DIR": str(data_dir), "HANGAR_PREPARE_PACK": "0"}
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [hangar, "serve", "--host", "127.0.0.1", "--port", str(port), "--no-site"],
            env=env,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"hangar serve stopped ({proc.returncode}): {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("hangar serve did not answer /healthz")


async def populate(base: str, owner_token: str) -> dict[str, Any]:
    ws_url = base.replace("http://", "ws://") + "/rpc"
    async with Rpc(ws_url, owner_token) as owner:
        me = await owner.call("users.me")
        workspace = await owner.call("workspaces.create", name="Fixture workspace")
        wid = workspace["id"]
        code = (await owner.call("members.invite", workspace_id=wid, role="member"))["code"]
        async with httpx.AsyncClient(timeout=30) as http:
            paired = await http.post(f"{base}/auth/pair", json={"code": code, "deviceName": "member-laptop"})
        paired.raise_for_status()
        member = paired.json()
        spaces: dict[str, dict[str, Any]] = {}
        for title, texts in MESSAGES.items():
            space = await owner.call("spaces.create", workspace_id=wid, title=title)
            sid = space.get("id") or space.get("spaceId")
            for text in texts:
                await owner.call("messages.post", workspace_id=wid, space_id=sid, content=text)
            spaces[title] = {"id": sid, "messages": list(texts)}
        async with Rpc(ws_url, member["token"]) as as_member:
            await as_member.call(
                "messages.post", workspace_id=wid, space_id=spaces["general"]["id"], content=MEMBER_MESSAGE
            )
        spaces["general"]["messages"].append(MEMBER_MESSAGE)
        await owner.call("pipelines.templates.create", workspace_id=wid, template=TEMPLATE)
        run_id = (await owner.call("pipelines.runs.start", workspace_id=wid, templateId=TEMPLATE["id"]))["runId"]
        run: dict[str, Any] = {}
        for _ in range(600):
            run = await owner.call("pipelines.runs.get", workspace_id=wid, runId=run_id)
            if run.get("status") in ("completed", "failed", "cancelled"):
                break
            await asyncio.sleep(0.1)
        if run.get("status") != "completed":
            raise RuntimeError(f"the fixture run did not complete: {run}")
        chat = None
        try:
            await owner.call("chat.connect", workspace_id=wid, credentials=SLACK_CREDENTIALS)
            status = await owner.call("chat.status", workspace_id=wid)
            chat = {"provider": status["provider"], "fields": sorted(SLACK_CREDENTIALS)}
        except RuntimeError as exc:
            if "unknown" not in str(exc).lower() and "not_found" not in str(exc).lower():
                raise
        return {
            "owner": {"userId": me.get("id") or me.get("userId"), "token": owner_token},
            "member": {"userId": member["userId"], "token": member["token"], "role": "member"},
            "workspace": {"id": wid, "name": "Fixture workspace"},
            "spaces": spaces,
            "pipeline": {"templateId": TEMPLATE["id"], "runId": run_id, "status": "completed"},
            "chat": chat,
        }


def main() -> None:
    hangar, data_dir, manifest = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    log = manifest.with_suffix(".serve.log")
    env = {**os.environ, "HANGAR_DATA_DIR": str(data_dir)}
    port = free_port()
    proc = serve(hangar, data_dir, port, log)
    try:
        token = subprocess.run(
            [hangar, "admin", "owner-token"], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        records = asyncio.run(populate(f"http://127.0.0.1:{port}", token))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    manifest.write_text(json.dumps(records, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
