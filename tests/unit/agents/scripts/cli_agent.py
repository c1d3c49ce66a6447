"""A small command-line agent for the command adapter tests: behaviour is chosen by the prompt."""

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
    print(f"token={os.environ.get('AGENT_TOKEN', '-')} plain={os.environ.get('PLAIN', '-')}", flush=True)
elif word == "context":
    path = os.environ["HANGAR_CONTEXT_FILE"]
    with open(path) as fh:
        context = json.load(fh)
    mode = oct(os.stat(path).st_mode & 0o777)
    turns = [f"{'me' if m['own'] else m['author']['name']}: {m['content']}" for m in context["history"]]
    print(json.dumps({"mode": mode, "agent": context["agent"], "prompt": context["prompt"], "turns": turns}))
elif word == "mcp":
    # Hands the MCP address and credential to the test through the working folder (never stdout, which is
    # posted), says whether the endpoint is reachable from here, and waits for the test to say it is done.
    import socket
    import urllib.parse

    url = os.environ.get("HANGAR_MCP_URL")
    reach = "-"
    if url:
        parts = urllib.parse.urlsplit(url)
        try:
            socket.create_connection((parts.hostname, parts.port), timeout=2).close()
            reach = "connected"
        except OSError as exc:
            reach = type(exc).__name__
    found = {k: os.environ.get(k) for k in ("HANGAR_MCP_URL", "HANGAR_MCP_TOKEN", "HANGAR_MCP_UNAVAILABLE")}
    with open("mcp.json.tmp", "w") as fh:
        json.dump({**found, "reach": reach}, fh)
    os.rename("mcp.json.tmp", "mcp.json")
    for _ in range(600 if url else 0):
        if os.path.exists("go"):
            break
        time.sleep(0.1)
    print("called back" if url else f"no way back: {found['HANGAR_MCP_UNAVAILABLE']}", flush=True)
elif word == "bad":
    print(json.dumps({"n": "two"}), flush=True)
else:
    print(f"unknown prompt {prompt!r}", flush=True)
