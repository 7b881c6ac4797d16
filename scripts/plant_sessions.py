#!/usr/bin/env python3
"""Writes planted Claude Code sessions, and the manifest of the habits planted in them, for
measuring how faithfully toolsmith turns habits into tools (issue 20).

    scripts/plant_sessions.py OUT_DIR [--sessions N (20)] [--seed S (20)]

OUT_DIR gets `-home-dev-<project>/<sessionId>.jsonl` transcripts in the format Claude Code 2.x
writes (`~/.claude/projects/<dir>/<session>.jsonl`: `assistant` records with `tool_use` blocks,
`user` records with the matching `tool_result`s, `sessionId`, `cwd`, `timestamp`, `uuid` chains),
one sub-agent transcript (`agent-<id>.jsonl` beside its parent, `isSidechain: true`, `agentId`),
and `habits.json`: for every planted habit its id, what it covers, and each occurrence with its
session (as toolsmith names it: `<sessionId>`, or `<sessionId>:agent:<agentId>` for a
sub-agent), the file, and the commands exactly as logged, in order, each with its `seq`
(`byte offset of its record << 8`, how the ingest numbers Claude Code actions).

The same seed gives the same bytes. The habits (values vary between occurrences, the habit's own
words never do):

- `objdump-range`: `objdump -d BIN --start-address A --stop-address B`, `addr2line -f -e BIN A`
  (a program with sub-command-less flags taking values, hex values);
- `openssl-verify`: `openssl x509 -in CERT -noout -subject -enddate`, `openssl verify -CAfile CA
  CERT` (a sub-command CLI with single-dash flags), often after a stray `sed`/`grep`/`uname`;
- `coverage-report`: `coverage run -m pytest TEST -q`, `coverage report -m --include='DIR/*'`
  (one occurrence inside a sub-agent);
- `check-module`: `./scripts/check.sh --module X`, `make -C X test`, 10 times in 2 long sessions
  (a project-local script, few sessions, many occurrences);
- `heredoc-commit`: `git add FILES && git commit -m "$(cat <<'EOF' … EOF)"` (Claude Code's commit
  idiom, one action of two commands);
- `branch-sync`: `git checkout BRANCH`, `git pull --rebase origin BRANCH` with branches of
  different shapes (`main`, `feature/login`, `fix-1432`, `release/2.1`);
- `npm-missing-module`: `npm test` failing with `Cannot find module 'X'` (is_error), `npm
  install X`, `npm test` passing (a recovery whose fix names what the error named).

Stray steps (`sed -n`, `grep -rn`, `uname -a`) sit right before or after some occurrences, and
noise (`ls`, `git status`, Read, TodoWrite, one-off commands) between them. Standard library only.
"""

import argparse
import json
import os
import random
import sys
import uuid

PROJECT = "relay"
CWD = f"/home/dev/{PROJECT}"
VERSION = "2.0.14"
MODEL = "claude-sonnet-4-5-20250929"
COMMIT_TRAILER = (
    "\n\n🤖 Generated with [Claude Code](https://claude.com/claude-code)\n\n"
    "Co-Authored-By: Claude <noreply@anthropic.com>"
)


class Rng:
    """The one source of randomness: seeded, so the output is reproducible."""

    def __init__(self, seed):
        self.r = random.Random(seed)
        self.decks = {}

    def pick(self, items):
        return items[self.r.randrange(len(items))]

    def deal(self, items):
        """The next of `items` from a shuffled deck of them: values vary between occurrences
        and every value comes round before any repeats."""
        key = id(items)
        deck = self.decks.get(key)
        if not deck:
            deck = list(items)
            self.r.shuffle(deck)
            self.decks[key] = deck
        return deck.pop()

    def chance(self, p):
        return self.r.random() < p

    def ident(self, prefix, n=24):
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        return prefix + "".join(alphabet[self.r.randrange(len(alphabet))] for _ in range(n))

    def uuid(self):
        return str(uuid.UUID(int=self.r.getrandbits(128), version=4))

    def hex_addr(self, low, high):
        return "0x%x" % (self.r.randrange(low, high) & ~0xF)


# ---------------------------------------------------------------------------------------------
# Steps: one tool call with its result.


class Step:
    """A tool call: `tool` with `input`, the result's text, whether it failed, and (for a
    planted habit) which occurrence it belongs to."""

    def __init__(self, tool, tool_input, output="", ok=True, ms=400, habit=None):
        self.tool = tool
        self.input = tool_input
        self.output = output
        self.ok = ok
        self.ms = ms
        self.habit = habit  # (habit id, occurrence key) or None
        self.subagent = None  # for a Task step: the steps its sub-agent runs


def bash(command, output="", ok=True, ms=400, description=None):
    return Step("Bash", {"command": command, "description": description or command[:60]},
                output, ok, ms)


# ---------------------------------------------------------------------------------------------
# The habits. Each maker returns the steps of one occurrence; the values come from the rng.

BINS = ["build/agent", "build/agentd", "out/loader", "build/bin/relayd", "target/release/probe"]
CERTS = ["certs/api.pem", "certs/edge-01.pem", "tls/proxy.crt", "certs/internal/ldap.pem",
         "certs/relay.example.com.pem", "tls/mqtt-broker.pem"]
CAS = ["certs/ca.pem", "certs/root-ca.pem", "tls/ca-bundle.crt"]
PACKAGES = ["api", "storage", "auth", "relay/core", "cli"]
MODULES = ["ingest", "router", "auth", "storage", "metrics", "cli"]
BRANCHES = ["main", "feature/login", "fix-1432", "release/2.1", "hotfix-cache",
            "feature/search-v2", "deps/bump-tokio"]
NPM_MODULES = ["dotenv", "lodash", "chalk", "uuid", "express", "@babel/core", "node-fetch"]
COMMITS = [
    (["src/auth/token.py"], "Fix token refresh race on expiry"),
    (["src/relay/router.py", "tests/test_router.py"], "Route retries through the backoff queue"),
    (["README.md"], "Document the relay's environment variables"),
    (["src/storage/cache.py", "src/storage/__init__.py", "tests/test_cache.py"],
     "Expire cache entries after an hour\n\nThe TTL was read in minutes but applied in seconds."),
    (["pyproject.toml"], "Pin pytest below 9"),
    (["src/cli/main.py", "tests/test_cli.py"], "Add --json to relay status"),
]


def objdump_range(rng):
    binary = rng.deal(BINS)
    start = rng.hex_addr(0x401000, 0x408000)
    stop = "0x%x" % (int(start, 16) + (rng.r.randrange(0x200, 0x2000) & ~0xF))
    dis = (f"\n{binary}:     file format elf64-x86-64\n\n\nDisassembly of section .text:\n\n"
           f"{int(start, 16):016x} <handle_frame>:\n  {start[2:]}:\t55\tpush   %rbp\n")
    return [
        bash(f"objdump -d {binary} --start-address {start} --stop-address {stop}", dis, ms=300,
             description="Disassemble the crashing range"),
        bash(f"addr2line -f -e {binary} {start}",
             f"handle_frame\n/home/dev/relay/src/native/frame.c:{rng.r.randrange(20, 400)}",
             ms=60, description="Map the address to a source line"),
    ]


def openssl_verify(rng):
    cert = rng.deal(CERTS)
    ca = rng.pick(CAS)
    name = os.path.splitext(os.path.basename(cert))[0]
    return [
        bash(f"openssl x509 -in {cert} -noout -subject -enddate",
             f"subject=CN = {name}.relay.internal\nnotAfter=Mar {rng.r.randrange(1, 28)} "
             "12:00:00 2027 GMT", ms=40, description="Show the certificate's subject and expiry"),
        bash(f"openssl verify -CAfile {ca} {cert}", f"{cert}: OK", ms=45,
             description="Verify the chain"),
    ]


def coverage_report(rng):
    pkg = rng.deal(PACKAGES)
    test = f"tests/test_{pkg.replace('/', '_')}.py"
    return [
        bash(f"coverage run -m pytest {test} -q",
             f"........ [100%]\n{rng.r.randrange(8, 60)} passed in 1.{rng.r.randrange(10, 99)}s",
             ms=2400, description="Run the tests under coverage"),
        bash(f"coverage report -m --include='src/{pkg}/*'",
             f"Name    Stmts   Miss  Cover   Missing\nsrc/{pkg}/__init__.py   4   0   100%\n"
             f"TOTAL   {rng.r.randrange(100, 900)}   {rng.r.randrange(0, 40)}   9{rng.r.randrange(0, 9)}%",
             ms=500, description="Coverage of the package"),
    ]


def check_module(rng):
    module = rng.deal(MODULES)
    return [
        bash(f"./scripts/check.sh --module {module}",
             f"check {module}: lint ok, types ok", ms=1800, description=f"Check {module}"),
        bash(f"make -C {module} test",
             f"make: Entering directory '{CWD}/{module}'\n{rng.r.randrange(5, 90)} passed\n"
             f"make: Leaving directory '{CWD}/{module}'", ms=3300, description=f"Test {module}"),
    ]


def heredoc_commit(rng):
    files, message = rng.deal(COMMITS)
    command = (f"git add {' '.join(files)} && git commit -m \"$(cat <<'EOF'\n"
               f"{message}{COMMIT_TRAILER}\nEOF\n)\"")
    first = message.split("\n")[0]
    return [bash(command, f"[main {rng.ident('', 7).lower()}] {first}\n {len(files)} files "
                 "changed, 12 insertions(+), 3 deletions(-)", ms=120,
                 description="Commit the change")]


def branch_sync(rng):
    branch = rng.deal(BRANCHES)
    return [
        bash(f"git checkout {branch}", f"Switched to branch '{branch}'", ms=80,
             description="Switch branch"),
        bash(f"git pull --rebase origin {branch}",
             f"From github.com:dev/relay\n * branch            {branch} -> FETCH_HEAD\n"
             "Successfully rebased and updated refs/heads/" + branch, ms=1400,
             description="Bring the branch up to date"),
    ]


def npm_missing_module(rng):
    module = rng.deal(NPM_MODULES)
    failure = (
        "Exit code 1\n\n> relay-ui@0.4.0 test\n> jest\n\n FAIL  src/app.test.js\n"
        "  ● Test suite failed to run\n\n"
        f"    Cannot find module '{module}' from 'src/app.js'\n\n"
        "    Require stack:\n      src/app.js\n      src/app.test.js\n")
    return [
        bash("npm test", failure, ok=False, ms=2900, description="Run the UI tests"),
        bash(f"npm install {module}",
             f"\nadded {rng.r.randrange(1, 40)} packages, and audited 412 packages in 3s\n\n"
             "found 0 vulnerabilities", ms=3100, description="Install the missing module"),
        bash("npm test", f"\n> relay-ui@0.4.0 test\n> jest\n\n PASS  src/app.test.js\n"
             f"Tests:       {rng.r.randrange(5, 40)} passed", ms=3000,
             description="Run the UI tests again"),
    ]


HABITS = {
    "objdump-range": (objdump_range, "unknown CLI, flags with hex values, a path"),
    "openssl-verify": (openssl_verify, "sub-command CLI with single-dash flags, stray prefixes"),
    "coverage-report": (coverage_report,
                        "sub-command CLI, --flag=value, one occurrence in a sub-agent"),
    "check-module": (check_module, "project-local script, 10 occurrences in 2 sessions"),
    "heredoc-commit": (heredoc_commit, "git add && git commit -m \"$(cat <<'EOF' … EOF)\""),
    "branch-sync": (branch_sync, "one parameter, values of different shapes"),
    "npm-missing-module": (npm_missing_module, "recovery: the fix names what the error named"),
}

# ---------------------------------------------------------------------------------------------
# Stray steps and noise.


def stray(rng):
    return rng.pick([
        lambda: bash(f"sed -n '1,{rng.r.randrange(20, 80)}p' {rng.pick(['Makefile', 'setup.cfg', 'src/relay/config.py'])}",
                     "# ...", ms=10),
        lambda: bash(f"grep -rn \"{rng.pick(['TODO', 'FIXME', 'deprecated', 'timeout'])}\" src/",
                     "src/relay/router.py:88: # TODO", ms=30),
        lambda: bash("uname -a", "Linux devbox 6.12.0-1-amd64 #1 SMP x86_64 GNU/Linux", ms=5),
    ])()


def noise(rng):
    return rng.pick([
        lambda: bash("ls -la", "total 48\ndrwxr-xr-x  9 dev dev 4096 .", ms=5),
        lambda: bash("git status --short", " M src/relay/router.py", ms=20),
        lambda: bash("git diff --stat", " src/relay/router.py | 4 ++--", ms=20),
        lambda: bash("pwd", CWD, ms=2),
        lambda: bash(f"cat {rng.pick(['README.md', 'Makefile', 'package.json'])}", "...", ms=3),
        lambda: bash(f"wc -l src/{rng.deal(MODULES)}/*.py", "  120 total", ms=4),
        lambda: bash("python3 --version", "Python 3.12.7", ms=15),
        lambda: bash(f"du -sh {rng.pick(['build', 'node_modules', '.venv'])}", "412M\tbuild", ms=90),
        lambda: Step("Read", {"file_path": f"{CWD}/src/{rng.deal(MODULES)}/__init__.py"},
                     "     1\t\"\"\"The package.\"\"\"", ms=3),
        lambda: Step("Grep", {"pattern": rng.pick(["retry", "backoff", "ttl"]), "path": "src"},
                     "Found 3 files", ms=20),
        lambda: Step("TodoWrite", {"todos": [{"content": "Fix the failing check",
                                              "status": "in_progress",
                                              "activeForm": "Fixing the failing check"}]},
                     "Todos have been modified successfully.", ms=2),
        lambda: Step("Edit", {"file_path": f"{CWD}/src/{rng.deal(MODULES)}/core.py",
                              "old_string": "retries = 3", "new_string": "retries = 5"},
                     "The file has been updated.", ms=4),
    ])()


def noise_run(rng, low=0, high=3):
    return [noise(rng) for _ in range(rng.r.randrange(low, high + 1))]


# ---------------------------------------------------------------------------------------------
# Sessions: which habits go where.

PROMPTS = [
    "The relay crashes on malformed frames; find where",
    "Renew the staging certificates and check them",
    "Raise test coverage of the storage package",
    "Make the checks pass on every module",
    "Fix the UI test suite",
    "Rebase the open branches on their upstreams",
    "Commit the fixes from this morning",
    "Tidy up before the release",
]

# Habits spread over the sessions (round robin); check-module lives in two long sessions only.
SPREAD = ["objdump-range", "openssl-verify", "coverage-report", "heredoc-commit", "branch-sync",
          "npm-missing-module"]


def plan(rng, sessions):
    """For each session, the habits it holds in order (a habit may come back in a session)."""
    plans = [[] for _ in range(sessions)]
    for i in range(sessions):
        for k in (0, 2, 3):
            plans[i].append(SPREAD[(i + k) % len(SPREAD)])
    plans[0] = ["check-module"] * 6 + plans[0][:1]
    plans[1] = ["check-module"] * 4 + plans[1][:1]
    for p in plans[2:]:
        rng.r.shuffle(p)
    return plans


def session_steps(rng, habits_in_order, occurrences, sid, subagent_for=None):
    """The steps of one session; each planted occurrence is recorded in `occurrences`."""
    steps = noise_run(rng, 1, 3)
    for habit in habits_in_order:
        maker = HABITS[habit][0]
        occ_steps = maker(rng)
        key = (habit, len(occurrences))
        occurrences.append({"habit": habit, "key": key, "steps": occ_steps})
        for s in occ_steps:
            s.habit = key
        if habit == subagent_for:
            # This occurrence runs in a sub-agent the main session starts with Task.
            task = Step("Task", {"description": "Measure coverage",
                                 "prompt": "Run the tests under coverage and report the package's "
                                           "coverage", "subagent_type": "general-purpose"},
                        "Coverage measured.", ms=9000)
            task.subagent = noise_run(rng, 0, 1) + occ_steps + noise_run(rng, 0, 1)
            steps.append(task)
            subagent_for = None
        else:
            if rng.chance(0.6):
                steps.append(stray(rng))
            steps.extend(occ_steps)
            if rng.chance(0.25):
                steps.append(stray(rng))
        steps.extend(noise_run(rng, 1, 4))
    return steps


# ---------------------------------------------------------------------------------------------
# Writing the records.


class Writer:
    """Writes one transcript file, keeping byte offsets (the ingest's `seq` is offset << 8)."""

    def __init__(self, rng, sid, start, agent_id=None):
        self.rng = rng
        self.sid = sid
        self.agent_id = agent_id
        self.lines = []
        self.offset = 0
        self.parent = None
        self.clock = start  # seconds since the day's start

    def ts(self, advance):
        self.clock += advance
        s = int(self.clock)
        ms = int((self.clock - s) * 1000)
        day = 10 + s // 86400
        s %= 86400
        return f"2026-11-{day:02d}T{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}.{ms:03d}Z"

    def record(self, kind, message, advance, extra=None):
        u = self.rng.uuid()
        r = {"parentUuid": self.parent, "isSidechain": self.agent_id is not None,
             "userType": "external", "cwd": CWD, "sessionId": self.sid, "version": VERSION,
             "gitBranch": "main"}
        if self.agent_id is not None:
            r["agentId"] = self.agent_id
        r["type"] = kind
        r["message"] = message
        if kind == "assistant":
            r["requestId"] = self.rng.ident("req_011C")
        r["uuid"] = u
        r["timestamp"] = self.ts(advance)
        if extra:
            r.update(extra)
        self.parent = u
        line = (json.dumps(r, ensure_ascii=False) + "\n").encode()
        at = self.offset
        self.lines.append(line)
        self.offset += len(line)
        return at

    def prompt(self, text):
        self.record("user", {"role": "user", "content": text}, 3.0)

    def step(self, step):
        """Writes the call and its result; returns the call's seq."""
        call = self.rng.ident("toolu_01")
        at = self.record("assistant", {
            "id": self.rng.ident("msg_01"), "type": "message", "role": "assistant",
            "model": MODEL,
            "content": [{"type": "tool_use", "id": call, "name": step.tool, "input": step.input}],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 6, "cache_creation_input_tokens": 310,
                      "cache_read_input_tokens": 18231, "output_tokens": 95,
                      "service_tier": "standard"}}, 2.0 + self.rng.r.random() * 6)
        if step.tool == "Bash":
            extra = {"toolUseResult": {
                "stdout": step.output if step.ok else "",
                "stderr": "" if step.ok else step.output,
                "interrupted": False, "isImage": False}}
        else:
            extra = {"toolUseResult": {"type": "text"}}
        self.record("user", {"role": "user", "content": [
            {"tool_use_id": call, "type": "tool_result", "content": step.output,
             "is_error": not step.ok}]}, step.ms / 1000.0, extra)
        return at << 8

    def text(self):
        return b"".join(self.lines)


def write(out, sessions, seed):
    rng = Rng(seed)
    project_dir = os.path.join(out, "-home-dev-" + PROJECT)
    os.makedirs(project_dir, exist_ok=True)
    plans = plan(rng, sessions)
    occurrences = []
    files = []
    actions = 0
    # One coverage occurrence runs in a sub-agent: in the first session after the two long ones
    # that has the habit.
    sub_at = next((i for i, p in enumerate(plans) if i >= 2 and "coverage-report" in p), None)
    for i, habits in enumerate(plans):
        sid = rng.uuid()
        sub = "coverage-report" if i == sub_at else None
        steps = session_steps(rng, habits, occurrences, sid, subagent_for=sub)
        w = Writer(rng, sid, start=8 * 3600 + i * 7200)
        w.prompt(PROMPTS[i % len(PROMPTS)])
        seqs = {}  # id(step) -> (session, file, seq)
        name = f"{sid}.jsonl"
        for step in steps:
            seq = w.step(step)
            actions += 1
            seqs[id(step)] = (sid, name, seq)
            if step.subagent is not None:
                agent_id = rng.ident("", 8).lower()
                a = Writer(rng, sid, start=w.clock - 8.5, agent_id=agent_id)
                a.prompt(step.input["prompt"])
                agent_name = f"agent-{agent_id}.jsonl"
                for s in step.subagent:
                    seqs[id(s)] = (f"{sid}:agent:{agent_id}", agent_name, a.step(s))
                    actions += 1
                with open(os.path.join(project_dir, agent_name), "wb") as f:
                    f.write(a.text())
                files.append({"file": agent_name, "session": f"{sid}:agent:{agent_id}",
                              "parent_session": sid, "actions": len(step.subagent)})
        with open(os.path.join(project_dir, name), "wb") as f:
            f.write(w.text())
        files.append({"file": name, "session": sid, "actions": len(steps)})
        for occ in occurrences:
            if "session" in occ:
                continue
            first = seqs[id(occ["steps"][0])]
            occ["session"], occ["file"] = first[0], first[1]
            occ["commands"] = [{"command": s.input["command"], "seq": seqs[id(s)][2],
                                "ok": s.ok} for s in occ["steps"]]
    habits = []
    for habit, (_, covers) in HABITS.items():
        occs = [{"session": o["session"], "file": f"-home-dev-{PROJECT}/{o['file']}",
                 "commands": o["commands"]} for o in occurrences if o["habit"] == habit]
        habits.append({"id": habit, "covers": covers,
                       "sessions": len({o["session"].split(":")[0] for o in occs}),
                       "occurrences": occs})
    manifest = {
        "generator": "scripts/plant_sessions.py", "seed": seed, "sessions": sessions,
        "format": "claude-code", "cwd": CWD, "actions": actions,
        "files": [dict(f, file=f"-home-dev-{PROJECT}/{f['file']}") for f in files],
        "habits": habits,
    }
    with open(os.path.join(out, "habits.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, ensure_ascii=False)
        f.write("\n")
    return manifest


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="directory to write into (created; must hold no .jsonl yet)")
    ap.add_argument("--sessions", type=int, default=20,
                    help="main sessions (default 20; at least 4)")
    ap.add_argument("--seed", type=int, default=20, help="random seed (default 20)")
    args = ap.parse_args(argv)
    if args.sessions < 4:
        ap.error("--sessions must be at least 4 (two long sessions and a spread of habits)")
    if os.path.isdir(args.out) and any(
            name.endswith(".jsonl") or name.startswith("-home-dev-")
            for name in os.listdir(args.out)):
        ap.error(f"{args.out} already holds sessions: give a new directory")
    os.makedirs(args.out, exist_ok=True)
    manifest = write(args.out, args.sessions, args.seed)
    n_occ = sum(len(h["occurrences"]) for h in manifest["habits"])
    print(f"wrote {len(manifest['files'])} transcripts ({manifest['actions']} actions), "
          f"{len(manifest['habits'])} habits with {n_occ} occurrences, into {args.out} "
          f"(manifest: {os.path.join(args.out, 'habits.json')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
