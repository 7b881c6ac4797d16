#!/usr/bin/env python3
"""Issue 32's held-back measurement: every case of tests/data/secrets-held-back-32.toml is
written as a Claude Code session (a Bash call and its result, or a Write), ingested through the
real `toolsmith ingest` into a fresh state directory, and every file under that directory is
searched for each secret. A look-alike must come back from `toolsmith actions` unchanged.

    scripts/secrets-held-back.py [TOOLSMITH_BINARY]

Prints one line per case that leaks or is over-redacted, then the counts."""
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import tomllib

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "target/release/toolsmith")
CASES = tomllib.load(open(os.path.join(HERE, "tests/data/secrets-held-back-32.toml"), "rb"))["case"]
ALPHABETS = {
    "alnum": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    "hex": "0123456789abcdef",
    "b64": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    "pw": "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789!#%+=._-",
}
rng = random.Random(32)


def fill(text, drawn):
    def draw(m):
        spec = m.group(1)
        if spec not in drawn:
            prefix = ""
            parts = spec.split(":")
            if parts[0].startswith("prefix="):
                prefix, parts = parts[0][len("prefix="):], parts[1:]
            kind, n = parts[0], int(parts[1])
            drawn[spec] = prefix + "".join(rng.choice(ALPHABETS[kind]) for _ in range(n))
        return drawn[spec]
    return re.sub(r"\{secret:([^}]*)\}", draw, text)


def session(case, drawn):
    sid = "4f1c2d3e-0000-4000-8000-%012d" % rng.randrange(10**12)
    if "write_path" in case:
        name, tool_input = "Write", {"file_path": "/home/dev/app/" + case["write_path"],
                                     "content": fill(case["write_content"], drawn)}
        output = "File created successfully"
    else:
        name, tool_input = "Bash", {"command": fill(case["command"], drawn)}
        output = fill(case.get("output", ""), drawn)
    base = {"parentUuid": None, "isSidechain": False, "userType": "external",
            "cwd": "/home/dev/app", "sessionId": sid, "version": "2.1.97"}
    call = dict(base, type="assistant", uuid="a0000000-0000-4000-8000-000000000001",
                timestamp="2026-11-20T10:00:00.000Z",
                message={"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                         "content": [{"type": "tool_use", "id": "toolu_01HB", "name": name,
                                      "input": tool_input}]})
    result = dict(base, type="user", uuid="u0000000-0000-4000-8000-000000000001",
                  timestamp="2026-11-20T10:00:01.000Z",
                  message={"role": "user", "content": [{"tool_use_id": "toolu_01HB",
                                                         "type": "tool_result",
                                                         "content": output, "is_error": False}]})
    return json.dumps(call) + "\n" + json.dumps(result) + "\n", tool_input, output


leaks, kept, secrets_total, lookalikes, changed = 0, 0, 0, 0, 0
# A control first: a value no rule calls a secret must be found where it was stored, or the
# search itself is broken and every "kept out" below would mean nothing.
CONTROL = {"command": "echo {secret:alnum:20}", "control": True}
for i, case in enumerate([CONTROL] + CASES):
    drawn = {}
    text, tool_input, output = session(case, drawn)
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "s.jsonl")
        open(log, "w").write(text)
        state = os.path.join(tmp, "state")
        env = dict(os.environ, HOME=tmp, XDG_CONFIG_HOME=os.path.join(tmp, ".config"))
        subprocess.run([BIN, "--state", state, "ingest", "--format", "claude-code", log],
                       check=True, capture_output=True, env=env)
        what = case.get("command") or case.get("write_path")
        if case.get("control"):
            stored = b"".join(open(os.path.join(r, f), "rb").read()
                              for r, _, fs in os.walk(state) for f in fs)
            if not all(v.encode() in stored for v in drawn.values()):
                sys.exit("control failed: a plain value was not found in the store")
            continue
        i -= 1
        if case.get("leak", True):
            secrets_total += 1
            found = []
            for root, _, files in os.walk(state):
                for f in files:
                    data = open(os.path.join(root, f), "rb").read()
                    found += [v for v in drawn.values() if v.encode() in data]
            if found:
                leaks += 1
                print(f"leaks     #{i}: {what}")
            else:
                kept += 1
        else:
            lookalikes += 1
            out = subprocess.run([BIN, "--state", state, "actions", "--json"], check=True,
                                 capture_output=True, env=env).stdout
            stored = json.loads(out)[0]
            if stored["input"] != tool_input or (stored.get("output") or "") != output:
                changed += 1
                print(f"changed   #{i}: {what}")
print(f"secrets kept out: {kept} of {secrets_total}; leaked: {leaks}; "
      f"look-alikes changed: {changed} of {lookalikes}")
