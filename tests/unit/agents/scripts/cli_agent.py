"""A small command-line agent for the command adapter tests: behaviour is chosen by the prompt."""

import hashlib
import json
import os
import subprocess
import sys
import time

prompt = sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read()
word = prompt.split()[0] if prompt.split() else ""

if word == "echo":
    print(f"cwd={os.getcwd()}", flush=True)
    print(f"you said: {prompt}", flush=True)
elif word == "fail":
    print("partial output", flush=True)
    print("boom: the tool broke", file=sys.stderr, flush=True)
    sys.exit(3)
elif word == "sleep":
    child = subprocess.Popen(["sleep", "60"])
    with open("child.pid", "w") as fh:
        fh.write(str(child.pid))
    print("sleeping", flush=True)
    time.sleep(60)
elif word == "file":
    schema = json.loads(os.environ["HANGAR_OUTPUT_SCHEMA"])
    with open(os.environ["HANGAR_OUTPUT_FILE"], "w") as fh:
        json.dump({"n": 1, "schemaType": schema["type"]}, fh)
    print("wrote the output file", flush=True)
elif word == "lastline":
    print("thinking...", flush=True)
    print(json.dumps({"n": 2, "schemaType": "object"}), flush=True)
elif word == "env":
    token = os.environ.get("AGENT_TOKEN")
    # The value itself comes back redacted; its digest shows the program was given it.
    seen = f"{token} sha={hashlib.sha256(token.encode()).hexdigest()[:12]}" if token else "-"
    print(f"token={seen} plain={os.environ.get('PLAIN', '-')}", flush=True)
elif word == "context":
    path = os.environ["HANGAR_CONTEXT_FILE"]
    with open(path) as fh:
        context = json.load(fh)
    mode = oct(os.stat(path).st_mode & 0o777)
    turns = [f"{'me' if m['own'] else m['author']['name']}: {m['content']}" for m in context["history"]]
    print(json.dumps({"mode": mode, "agent": context["agent"], "prompt": context["prompt"], "turns": turns}))
elif word == "mcp":
    # Calls the product back over MCP with what the run was given (stdlib only: urllib, as any program could):
    # the spaces it is shown, its own space's messages and, given another space after the word, that space's
    # messages and a post there; tries paths of the server's listener other than /mcp, hands what it saw to the
    # test through the working folder (never stdout, which is posted), and waits for the test to say it is done.
    import urllib.error
    import urllib.parse
    import urllib.request

    def rpc(url, token, method, params):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
        headers = {
            "authorization": f"Bearer {token}",
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        try:
            with urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=20) as answer:
                text = answer.read().decode()
        except urllib.error.HTTPError as exc:
            return {"status": exc.code}
        # the answer is JSON or an event stream whose data lines carry it
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        return json.loads(data[-1] if data else text)

    def status(url):
        try:
            with urllib.request.urlopen(url, timeout=20) as answer:
                return [answer.status, answer.read().decode()]
        except urllib.error.HTTPError as exc:
            return [exc.code, exc.read().decode()]
        except OSError as exc:
            return [type(exc).__name__, str(exc)]

    url = os.environ.get("HANGAR_MCP_URL")
    token = os.environ.get("HANGAR_MCP_TOKEN")
    found = {k: os.environ.get(k) for k in ("HANGAR_MCP_URL", "HANGAR_MCP_TOKEN", "HANGAR_MCP_UNAVAILABLE")}
    if url:
        listed = rpc(url, token, "tools/list", {})
        found["tools"] = sorted(t["name"] for t in listed["result"]["tools"])
        called = rpc(
            url,
            token,
            "tools/call",
            {"name": "spaces.list", "arguments": {"workspace_id": os.environ["HANGAR_WORKSPACE_ID"]}},
        )
        found["spaces"] = [s["id"] for s in called["result"]["structuredContent"]["spaces"]]

        def tool(name, **arguments):
            """The tool's answer: its structured content, or the text of its refusal."""
            arguments["workspace_id"] = os.environ["HANGAR_WORKSPACE_ID"]
            result = rpc(url, token, "tools/call", {"name": name, "arguments": arguments})["result"]
            return {"error": result["content"][0]["text"]} if result.get("isError") else result["structuredContent"]

        for other in prompt.split()[1:2]:
            found["own"] = tool("messages.list", spaceId=os.environ["HANGAR_SPACE_ID"])
            found["elsewhere"] = {
                "messages.list": tool("messages.list", spaceId=other),
                "messages.post": tool("messages.post", spaceId=other, content="from another space"),
            }
        found["unauthenticated"] = rpc(url, "not-a-credential", "tools/list", {})
        origin = url.removesuffix("/mcp")
        found["other"] = {path: status(origin + path) for path in ("/rpc", "/auth/pair", "/healthz", "/mcpx")}
    with open("mcp.json.tmp", "w") as fh:
        json.dump(found, fh)
    os.rename("mcp.json.tmp", "mcp.json")
    for _ in range(600 if url else 0):
        if os.path.exists("go"):
            break
        time.sleep(0.1)
    print(f"called back: {len(found['tools'])} tools" if url else f"no way back: {found['HANGAR_MCP_UNAVAILABLE']}")
elif word == "tools":
    # Lists the tools its run's MCP credential is given (names only: the credential stays out of stdout).
    import urllib.request

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode()
    headers = {
        "authorization": f"Bearer {os.environ['HANGAR_MCP_TOKEN']}",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    with urllib.request.urlopen(urllib.request.Request(os.environ["HANGAR_MCP_URL"], body, headers)) as answer:
        text = answer.read().decode()
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    print(json.dumps(sorted(t["name"] for t in json.loads(data[-1] if data else text)["result"]["tools"])))
elif word == "mcp-again":
    # A later run of the same agent calls through the door with the credential an earlier run was given.
    import urllib.error
    import urllib.request

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode()
    headers = {
        "authorization": f"Bearer {prompt.split()[1]}",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    try:
        with urllib.request.urlopen(urllib.request.Request(os.environ["HANGAR_MCP_URL"], body, headers)) as answer:
            print(f"old credential: {answer.status}")
    except urllib.error.HTTPError as exc:
        print(f"old credential: {exc.code}")
elif word == "bad":
    print(json.dumps({"n": "two"}), flush=True)
else:
    print(f"unknown prompt {prompt!r}", flush=True)
