#!/usr/bin/env python3
"""Issue 32's held-back measurement: every case of tests/data/secrets-held-back-32.toml is
written as a session of each agent, in the shape that agent logs it (a shell call and its
output, or a file written), ingested through the real `toolsmith ingest` into a fresh state
directory, and every file under that directory is searched for each secret. A look-alike must
come back from `toolsmith actions` unchanged.

    scripts/secrets-held-back.py [--agent claude-code|codex|gemini-cli|opencode|all]
                                 [--cases FILE] [TOOLSMITH_BINARY]

(`--cases` reads another set of the same form; tests/data/secrets-held-back-32.toml by default.)

Agents and what a case becomes (shapes copied from ../shared/corpus and src/ingest/adapters):
  claude-code  a `Bash` tool_use and its tool_result, or a `Write` (projects/…/<session>.jsonl)
  codex        a rollout: `exec_command` function_call and its unified-exec output, or an
               `apply_patch` custom_tool_call whose patch is `*** Add File:` (sessions/…/rollout-…)
  gemini-cli   a session JSONL: a `gemini` message whose toolCalls hold `run_shell_command` or
               `write_file` with its functionResponse (~/.gemini/tmp/<hash>/chats/session-….jsonl)
  opencode     a part file of OpenCode's storage (`opencode-json`): a completed `bash` or `write`
               tool part (storage/part/<message>/<part>.json)

Per agent, controls come first: a shell call and a file write holding a value no rule calls a
secret must each appear in `toolsmith actions` with that value, and be found by the search of
the state's files; else that agent's figures are invalid (the record was not read, or the search
is broken, and every "kept out" would mean nothing). A case whose action does not appear in
`toolsmith actions` is counted as not ingested, never as kept out.

Prints one line per case that leaks, is over-redacted or was not ingested, then the counts per
agent. Exits 0 whatever the counts; 1 when an agent's figures are invalid or a case was not
ingested."""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import tomllib

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AGENTS = ["claude-code", "codex", "gemini-cli", "opencode"]
parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--agent", choices=AGENTS + ["all"], default="all")
parser.add_argument("--cases", default=os.path.join(HERE, "tests/data/secrets-held-back-32.toml"))
parser.add_argument("binary", nargs="?", default=os.path.join(HERE, "target/release/toolsmith"))
ARGS = parser.parse_args()
BIN = ARGS.binary
CASES = tomllib.load(open(ARGS.cases, "rb"))["case"]
ALPHABETS = {
    "alnum": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    "hex": "0123456789abcdef",
    "b64": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    "pw": "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789!#%+=._-",
}
CWD = "/home/dev/app"
# Controls: values no rule calls a secret, one for each shape a case can take.
CONTROLS = [{"command": "echo {secret:alnum:20}", "output": "{secret:alnum:20}\n"},
            {"write_path": "notes/control.txt", "write_content": "build id {secret:alnum:20}\n"}]


def fill(text, drawn, rng):
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


def call(case, drawn, rng):
    """The case as one call: ("shell", command, output) or ("write", path, content)."""
    if "write_path" in case:
        return "write", CWD + "/" + case["write_path"], fill(case["write_content"], drawn, rng)
    return "shell", fill(case["command"], drawn, rng), fill(case.get("output", ""), drawn, rng)


def uuid(rng):
    h = "%032x" % rng.getrandbits(128)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:]}"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def jsonl(records):
    return "".join(json.dumps(r) + "\n" for r in records)


# Each writer puts the call where its agent keeps its logs under `home` and returns the file,
# the `--format` to read it with, and the tool name and text the stored action must show.

def claude_code(kind, a, b, home, rng):
    sid = uuid(rng)
    if kind == "write":
        name, tool_input, output = "Write", {"file_path": a, "content": b}, \
            f"File created successfully at: {a}"
    else:
        name, tool_input, output = "Bash", {"command": a}, b
    base = {"parentUuid": None, "isSidechain": False, "userType": "external",
            "cwd": CWD, "sessionId": sid, "version": "2.1.97", "gitBranch": "main"}
    tool_id = "toolu_01" + "".join(rng.choice(ALPHABETS["alnum"]) for _ in range(22))
    records = [
        dict(base, type="assistant", uuid=uuid(rng), timestamp="2026-11-20T10:00:00.000Z",
             message={"id": "msg_01", "type": "message", "role": "assistant",
                      "model": "claude-sonnet-4-5",
                      "content": [{"type": "tool_use", "id": tool_id, "name": name,
                                   "input": tool_input}]}),
        dict(base, type="user", uuid=uuid(rng), timestamp="2026-11-20T10:00:01.000Z",
             message={"role": "user", "content": [{"tool_use_id": tool_id,
                                                    "type": "tool_result",
                                                    "content": output, "is_error": False}]}),
    ]
    path = write(os.path.join(home, ".claude/projects/-home-dev-app", sid + ".jsonl"),
                 jsonl(records))
    return path, "claude-code", name


def codex(kind, a, b, home, rng):
    sid = uuid(rng)
    call_id = "call_" + "".join(rng.choice(ALPHABETS["alnum"]) for _ in range(24))
    ts = "2026-11-20T10:00:%02d.000Z"
    records = [
        {"timestamp": ts % 0, "type": "session_meta",
         "payload": {"id": sid, "timestamp": ts % 0, "cwd": CWD, "originator": "codex_cli_rs",
                     "cli_version": "0.122.0", "source": "cli", "model_provider": "openai"}},
        {"timestamp": ts % 1, "type": "turn_context",
         "payload": {"cwd": CWD, "approval_policy": "on-request",
                     "sandbox_policy": {"type": "workspace-write", "network_access": False},
                     "model": "gpt-5.3-codex", "effort": "medium", "summary": "auto"}},
    ]
    if kind == "write":
        rel = os.path.relpath(a, CWD)
        lines = b[:-1].split("\n") if b.endswith("\n") else b.split("\n")
        patch = "*** Begin Patch\n*** Add File: " + rel + "\n" + \
            "".join("+" + line + "\n" for line in lines) + "*** End Patch\n"
        records += [
            {"timestamp": ts % 2, "type": "response_item",
             "payload": {"type": "custom_tool_call", "status": "completed", "call_id": call_id,
                         "name": "apply_patch", "input": patch}},
            {"timestamp": ts % 3, "type": "response_item",
             "payload": {"type": "custom_tool_call_output", "call_id": call_id,
                         "output": json.dumps({"output": "Success. Updated the following files:\n"
                                                         f"A {rel}\n",
                                               "metadata": {"exit_code": 0,
                                                            "duration_seconds": 0.0}})}},
        ]
        name = "apply_patch"
    else:
        tokens = max(1, len(b) // 4)
        records += [
            {"timestamp": ts % 2, "type": "response_item",
             "payload": {"type": "function_call", "name": "exec_command",
                         "arguments": json.dumps({"cmd": a, "yield_time_ms": 10000}),
                         "call_id": call_id}},
            {"timestamp": ts % 3, "type": "response_item",
             "payload": {"type": "function_call_output", "call_id": call_id,
                         "output": "Chunk ID: 4f2a1c\nWall time: 0.2140 seconds\n"
                                   f"Process exited with code 0\nOriginal token count: {tokens}\n"
                                   f"Output:\n{b}"}},
        ]
        name = "exec_command"
    path = write(os.path.join(home, ".codex/sessions/2026/11/20",
                              f"rollout-2026-11-20T10-00-00-{sid}.jsonl"), jsonl(records))
    return path, "codex", name


def gemini_cli(kind, a, b, home, rng):
    sid = uuid(rng)
    stamp = "%d" % (1795168800000 + rng.randrange(10**6))
    if kind == "write":
        name, args = "write_file", {"file_path": a, "content": b}
        output = f"Successfully created and wrote to new file: {a}. Here is the updated code:\n{b}"
        description, display = os.path.relpath(a, CWD), "WriteFile"
    else:
        name, args = "run_shell_command", {"command": a, "description": "Run the command."}
        output = f"Output: {b.rstrip() or '(empty)'}\nProcess Group PGID: 48213"
        description, display = a, "Shell"
    call_id = f"{name}_{stamp}_0"
    meta = {"sessionId": sid, "projectHash": "%064x" % rng.getrandbits(256),
            "startTime": "2026-11-20T10:00:00.000Z", "lastUpdated": "2026-11-20T10:00:00.000Z",
            "kind": "main"}
    user = {"id": uuid(rng), "timestamp": "2026-11-20T10:00:01.000Z", "type": "user",
            "content": [{"text": "Go on."}]}
    message = {"id": uuid(rng), "timestamp": "2026-11-20T10:00:05.000Z", "type": "gemini",
               "content": "", "thoughts": [],
               "tokens": {"input": 6625, "output": 55, "cached": 5573, "thoughts": 0, "tool": 0,
                          "total": 6680},
               "model": "gemini-3-flash-preview",
               "toolCalls": [{"id": call_id, "name": name, "args": args,
                              "result": [{"functionResponse": {"id": call_id, "name": name,
                                                               "response": {"output": output}}}],
                              "status": "success", "timestamp": "2026-11-20T10:00:06.000Z",
                              "description": description, "displayName": display,
                              "renderOutputAsMarkdown": False}]}
    records = [meta, user, {"$set": {"lastUpdated": "2026-11-20T10:00:01.000Z"}}, message,
               {"$set": {"lastUpdated": "2026-11-20T10:00:06.000Z"}}]
    path = write(os.path.join(home, ".gemini/tmp", meta["projectHash"], "chats",
                              f"session-2026-11-20T10-00-{sid[:8]}.jsonl"), jsonl(records))
    return path, "gemini-cli", name


def opencode(kind, a, b, home, rng):
    def oc_id(prefix):
        return prefix + "%012x" % rng.getrandbits(48) + "".join(
            rng.choice(ALPHABETS["alnum"]) for _ in range(14))
    sid, mid, pid = oc_id("ses_"), oc_id("msg_"), oc_id("prt_")
    time = {"start": 1795168800179, "end": 1795168800390}
    if kind == "write":
        name = "write"
        state = {"status": "completed", "input": {"content": b, "filePath": a},
                 "output": "Wrote file successfully.",
                 "metadata": {"diagnostics": {}, "filepath": a, "exists": False,
                              "truncated": False},
                 "title": a.lstrip("/"), "time": time}
    else:
        name = "bash"
        state = {"status": "completed", "input": {"command": a, "description": "Run it"},
                 "output": b, "metadata": {"output": b, "exit": 0, "description": "Run it",
                                           "truncated": False},
                 "title": "Run it", "time": time}
    part = {"id": pid, "sessionID": sid, "messageID": mid, "type": "tool", "tool": name,
            "callID": "toolu_" + "".join(rng.choice(ALPHABETS["alnum"]) for _ in range(24)),
            "state": state}
    path = write(os.path.join(home, ".local/share/opencode/storage/part", mid, pid + ".json"),
                 json.dumps(part, indent=2))
    return path, "opencode-json", name


WRITERS = {"claude-code": claude_code, "codex": codex, "gemini-cli": gemini_cli,
           "opencode": opencode}


def run_case(agent, case, rng):
    """Writes, ingests and inspects one case. Returns (drawn values, stored action or None,
    the values found in the state's files, the call)."""
    drawn = {}
    kind, a, b = call(case, drawn, rng)
    with tempfile.TemporaryDirectory() as tmp:
        home = os.path.join(tmp, "home")
        log, fmt, name = WRITERS[agent](kind, a, b, home, rng)
        state = os.path.join(tmp, "state")
        env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
                   XDG_DATA_HOME=os.path.join(home, ".local/share"))
        for var in ("TOOLSMITH_CONFIG", "TOOLSMITH_SOCKET", "CONFIGURATION_DIRECTORY"):
            env.pop(var, None)
        run = subprocess.run([BIN, "--state", state, "ingest", "--format", fmt, log],
                             capture_output=True, env=env)
        if run.returncode != 0:
            sys.exit(f"{agent}: `toolsmith ingest --format {fmt}` failed (exit {run.returncode}): "
                     f"{run.stderr.decode('utf-8', 'replace').strip()}")
        out = subprocess.run([BIN, "--state", state, "actions", "--json"], check=True,
                             capture_output=True, env=env).stdout
        actions = [x for x in json.loads(out) if x.get("tool") == name]
        found = set()
        for root, _, files in os.walk(state):
            for f in files:
                data = open(os.path.join(root, f), "rb").read()
                found |= {v for v in drawn.values() if v.encode() in data}
    return drawn, (actions[0] if len(actions) == 1 else None), found, (kind, a, b)


def shows(stored, kind, a, b):
    """Whether the stored action holds the call's text unchanged: the command (a Codex patch,
    a file's content) as written, and the output (wrapped in the agent's own header) in it."""
    inp = stored.get("input") or {}
    output = stored.get("output") or ""
    if kind == "shell":
        return inp.get("command") == a and b.rstrip("\n") in output
    # A write: the content, or each of its lines as a Codex patch adds them.
    patch = inp.get("patch") or ""
    return inp.get("content") == b or bool(patch) and all(
        "+" + line + "\n" in patch for line in b.split("\n") if line)


def measure(agent):
    rng = random.Random(32)
    for i, control in enumerate(CONTROLS):
        drawn, stored, found, (kind, a, b) = run_case(agent, control, rng)
        if stored is None:
            return f"{agent}: INVALID: control {i + 1} ({kind}) not in `toolsmith actions`"
        if not shows(stored, kind, a, b):
            return f"{agent}: INVALID: control {i + 1} ({kind}) stored changed: {stored}"
        if set(drawn.values()) - found:
            return f"{agent}: INVALID: control {i + 1}'s plain value not found in the state files"
    kept = leaked = secrets = lookalikes = unchanged = missing = 0
    for i, case in enumerate(CASES):
        drawn, stored, found, (kind, a, b) = run_case(agent, case, rng)
        what = case.get("command") or case.get("write_path")
        if stored is None:
            missing += 1
            print(f"{agent:<12} not ingested #{i}: {what}")
            continue
        if case.get("leak", True):
            secrets += 1
            if found:
                leaked += 1
                print(f"{agent:<12} leaks     #{i}: {what}")
            else:
                kept += 1
        else:
            lookalikes += 1
            if shows(stored, kind, a, b):
                unchanged += 1
            else:
                print(f"{agent:<12} changed   #{i}: {what}")
    line = (f"{agent}: secrets kept out: {kept} of {secrets}; leaked: {leaked}; "
            f"look-alikes unchanged: {unchanged} of {lookalikes}")
    if missing:
        line += f"; NOT INGESTED: {missing} cases (counted in neither)"
    return line


summary = [measure(agent) for agent in (AGENTS if ARGS.agent == "all" else [ARGS.agent])]
print()
print("\n".join(summary))
sys.exit(1 if any("INVALID" in s or "NOT INGESTED" in s for s in summary) else 0)
