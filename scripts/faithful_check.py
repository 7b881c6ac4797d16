#!/usr/bin/env python3
"""Measures how faithfully toolsmith turns planted habits into tools (issue 20), end to end
through the real daemon.

    scripts/plant_sessions.py /tmp/planted
    scripts/faithful_check.py /tmp/planted [--bin DIR] [--json] [--keep] [--timeout S]

In a scratch environment of its own (temporary HOME and XDG_* directories, a configuration with
one `claude-code` source on the planted directory and `generate.backend = "template"`, so no
model), it starts `toolsmithd` in the foreground as a child, waits for its `ready` line, follows
its event stream (`events.subscribe` on the control socket), waits until `toolsmith sources` says
every planted byte was read (re-checked on each `ingest.actions` event), asks the daemon to mine
(`toolsmith mine`, the daemon's `mine.run`) and to generate (`toolsmith generate`, its
`generate.run`, which answers once the candidates are validated), then stops it.

Then, for every candidate (`toolsmith --json candidates`), it reads the staged candidate
(`<state>/staging/<id>/spec.json`, the latest `attempt-N/tool/` with `tool.yaml` and
`tests/cases.json`) and matches it to the planted habits (`habits.json`) by its evidence: a
candidate belongs to a habit when one of its occurrences (session, first and last action seq)
overlaps one of the habit's occurrences. For every planted occurrence a candidate holds, it runs
the candidate's dry run in the real sandbox (`toolsmith sandbox --env TOOLSMITH_DRY_RUN=1
--tool-dir …`), with the parameters (or arguments, stdin) of the candidate's own dry-run case for
that occurrence (`tests/cases.json`; a recovery's case gives the failing command's recorded
output as `stdin`, which its dry run reads in place of running that command, so it is fed as
the case says), else those its spec recorded for it, and compares what it
prints with the commands the log recorded: both parsed as the shell would (quotes removed,
`$(cat <<'EOF' … EOF)` replaced by its body, split into simple commands at `&&`, `;`, newlines),
word for word, reporting the first difference.

Per habit: the candidates awaiting review (goal: exactly 1) and the failed ones, and whether the
candidate awaiting review reproduces every occurrence word for word. Totals: the share of habits
reproduced word for word (goal 100%) and candidates awaiting review per habit (goal 1.0).
Candidates that match no habit are listed too.

Exit status: 0 whatever the figures (this measures); 1 when the pipeline could not be run (the
daemon did not start, a step failed or timed out), 2 for a usage error. Standard library only.
"""

import argparse
import json
import os
import queue
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STDIN_VAR = "TOOLSMITH_CASE_STDIN"


class PipelineError(Exception):
    """The pipeline could not be run: what failed, and where to look."""


# ---------------------------------------------------------------------------------------------
# Shell words: what a command line means once the shell has parsed it.

HEREDOC_CAT = re.compile(r"\$\(\s*cat\s+<<-?\s*(['\"]?)(\w+)\1[ \t]*\n(.*?)\n\2[ \t]*\n?\s*\)",
                         re.DOTALL)
SEPARATORS = {";", "&&", "\n", "&", ";;"}


def unheredoc(text):
    """`$(cat <<'EOF' … EOF)` is its body (command substitution drops the trailing newlines);
    Claude Code writes every commit message this way. Replaced in the raw text wherever the shell
    would expand it (not inside single quotes), quoted for where it stands."""
    out, i, quote = [], 0, None  # quote: None, "'" or '"'
    while i < len(text):
        ch = text[i]
        if quote != "'" and text.startswith("$(", i):
            m = HEREDOC_CAT.match(text, i)
            if m:
                body = m.group(3).rstrip("\n")
                if quote == '"':
                    # What shlex (the parser here) unescapes inside double quotes.
                    out.append(re.sub(r'([\\"])', r"\\\1", body))
                else:
                    out.append("'" + body.replace("'", "'\\''") + "'")
                i = m.end()
                continue
        if ch == "\\" and quote != "'" and i + 1 < len(text):
            out.append(text[i:i + 2])
            i += 2
            continue
        if ch in "'\"" and quote in (None, ch):
            quote = None if quote == ch else ch
        out.append(ch)
        i += 1
    return "".join(out)


def shell_commands(text):
    """The simple commands of a shell text, each as its list of words after quote removal.
    Commands are split at `;`, `&&`, `&` and newlines; a pipe (`|`, `||`) stays a word inside
    the command so that its presence is compared too. Raises ValueError on unbalanced quotes."""
    lex = shlex.shlex(unheredoc(text), posix=True, punctuation_chars=";&|\n")
    lex.whitespace = " \t\r"
    lex.whitespace_split = True
    tokens = list(lex)
    merged = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        # `2>&1`, `>&2`: a redirection, not a background `&`.
        if t == "&" and merged and merged[-1].endswith((">", "<")) and i + 1 < len(tokens):
            merged[-1] = merged[-1] + "&" + tokens[i + 1]
            i += 2
            continue
        merged.append(t)
        i += 1
    commands, current = [], []
    for t in merged:
        if t in SEPARATORS:
            if current:
                commands.append(current)
            current = []
        else:
            current.append(t)
    if current:
        commands.append(current)
    return commands


def parse_or_opaque(text):
    try:
        return shell_commands(text)
    except ValueError as e:
        return [[f"<does not parse: {e}: {text!r}>"]]


def first_difference(expected, got):
    """None when the two lists of commands are the same word for word; else a description of
    the first place they differ."""
    for i in range(max(len(expected), len(got))):
        if i >= len(got):
            return {"command": i + 1, "word": None, "expected": shlex.join(expected[i]),
                    "got": None, "what": f"command {i + 1} missing: `{one_line(expected[i])}`"}
        if i >= len(expected):
            return {"command": i + 1, "word": None, "expected": None, "got": shlex.join(got[i]),
                    "what": f"extra command {i + 1}: `{one_line(got[i])}`"}
        e, g = expected[i], got[i]
        if e == g:
            continue
        for j in range(max(len(e), len(g))):
            ew = e[j] if j < len(e) else None
            gw = g[j] if j < len(g) else None
            if ew != gw:
                what = (f"command {i + 1} word {j + 1}: expected {short(ew)}, got {short(gw)}"
                        f" — expected `{one_line(e)}`, got `{one_line(g)}`")
                return {"command": i + 1, "word": j + 1, "expected": shlex.join(e),
                        "got": shlex.join(g), "what": what}
    return None


def one_line(words, limit=160):
    """A command for a one-line message: newlines shown as \\n, cut at `limit`."""
    text = shlex.join(words).replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def short(word, limit=60):
    if word is None:
        return "(nothing)"
    text = repr(word)
    return text if len(text) <= limit else text[:limit - 3] + "...'"


# ---------------------------------------------------------------------------------------------
# The scratch environment and the daemon.


class Scratch:
    """Temporary HOME and XDG directories, the configuration, and the binaries to run."""

    def __init__(self, planted, bindir, keep, extra_config, policy=None):
        self.root = tempfile.mkdtemp(prefix="toolsmith-faithful-")
        self.keep = keep
        self.bindir = bindir
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("TOOLSMITH_", "XDG_", "STATE_DIRECTORY",
                                         "RUNTIME_DIRECTORY", "CONFIGURATION_DIRECTORY",
                                         "CREDENTIALS_DIRECTORY", "NOTIFY_SOCKET",
                                         "LISTEN_"))}
        for name, sub in [("HOME", "home"), ("XDG_CONFIG_HOME", "config"),
                          ("XDG_STATE_HOME", "state"), ("XDG_DATA_HOME", "data"),
                          ("XDG_RUNTIME_DIR", "run"), ("XDG_CACHE_HOME", "cache")]:
            path = os.path.join(self.root, sub)
            os.makedirs(path, mode=0o700)
            self.env[name] = path
        self.env["NO_COLOR"] = "1"
        self.workspaces = os.path.join(self.root, "workspaces")
        os.makedirs(self.workspaces)
        conf_dir = os.path.join(self.env["XDG_CONFIG_HOME"], "toolsmith")
        os.makedirs(conf_dir)
        self.config = os.path.join(conf_dir, "config.toml")
        glob = os.path.join(os.path.abspath(planted), "**", "*.jsonl")
        text = ("# faithful_check.py: one claude-code source on the planted sessions; offline.\n"
                "[generate]\nbackend = \"template\"\n"
                + (f"policy = {json.dumps(os.path.abspath(policy))}\n" if policy else "")
                + "\n"
                f"[[source]]\nname = \"planted\"\nformat = \"claude-code\"\npath = {json.dumps(glob)}\n")
        if extra_config:
            with open(extra_config, encoding="utf-8") as f:
                text += "\n# from --extra-config\n" + f.read()
        with open(self.config, "w", encoding="utf-8") as f:
            f.write(text)
        self.daemon_log = os.path.join(self.root, "toolsmithd.log")

    def exe(self, name):
        return os.path.join(self.bindir, name)

    def toolsmith(self, *args, timeout=120, check=True, json_out=True):
        cmd = [self.exe("toolsmith")] + (["--json"] if json_out else []) + list(args)
        try:
            p = subprocess.run(cmd, check=False, env=self.env, capture_output=True, text=True,
                               timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            raise PipelineError(f"`{shlex.join(cmd)}` did not finish within {timeout} s") from e
        if check and p.returncode != 0:
            raise PipelineError(f"`{shlex.join(cmd)}` exited {p.returncode}: {p.stderr.strip()}")
        if json_out and check:
            try:
                return json.loads(p.stdout)
            except json.JSONDecodeError as e:
                raise PipelineError(f"`{shlex.join(cmd)}` printed no JSON: {p.stdout[:300]!r}") \
                    from e
        return p

    def cleanup(self):
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)


class Daemon:
    """`toolsmithd` in the foreground, as our child; its stderr goes to a file, and its `ready`
    line is awaited, not slept for."""

    def __init__(self, scratch):
        self.scratch = scratch
        self.ready = threading.Event()
        self.said_ready = False
        self.proc = subprocess.Popen(
            ["nice", "-n", "19", scratch.exe("toolsmithd")], env=scratch.env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True)
        self.log = open(scratch.daemon_log, "wb")  # noqa: SIM115 (closed in stop())
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.proc.stdout:
            self.log.write(line)
            self.log.flush()
            if b"toolsmithd ready" in line:
                self.said_ready = True
                self.ready.set()
        self.ready.set()  # its output ended: whoever waits finds out it stopped

    def wait_ready(self, timeout):
        came = self.ready.wait(timeout)
        if came and not self.said_ready:
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        if self.proc.poll() is not None or (came and not self.said_ready):
            self.log.flush()
            with open(self.scratch.daemon_log, encoding="utf-8", errors="replace") as f:
                tail = " | ".join(f.read().strip().splitlines()[-3:])
            raise PipelineError(f"toolsmithd exited {self.proc.returncode} before it was ready: "
                                f"{tail}")
        if not came:
            raise PipelineError(f"toolsmithd did not become ready within {timeout} s; its log: "
                                f"{self.scratch.daemon_log}")

    def stop(self):
        if self.proc.poll() is None:
            self.scratch.toolsmith("stop", check=False, json_out=False, timeout=30)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(10)
        self.log.close()


class Events:
    """The daemon's event stream (`events.subscribe`), read into a queue by a thread."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.sock.sendall(b'{"jsonrpc":"2.0","id":1,"method":"events.subscribe","params":{}}\n')
        self.queue = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buf = b""
        while True:
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    msg = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if msg.get("method") == "event":
                    self.seen.append(msg["params"].get("kind"))
                    self.queue.put(msg["params"])
        self.queue.put(None)

    def wait(self, kinds, timeout):
        """The next event whose kind is one of `kinds`, or None when the time is up."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                ev = self.queue.get(timeout=left)
            except queue.Empty:
                return None
            if ev is None:
                raise PipelineError("the daemon closed the event stream")
            if ev.get("kind") in kinds:
                return ev

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def planted_bytes(planted):
    total = 0
    for dirpath, _, names in os.walk(planted):
        total += sum(os.path.getsize(os.path.join(dirpath, n)) for n in names
                     if n.endswith(".jsonl"))
    return total


def run_pipeline(scratch, planted, manifest, timeout):
    """Daemon up, everything read, mined, generated; returns what the run showed."""
    started = time.monotonic()
    deadline = started + timeout

    def left():
        rest = deadline - time.monotonic()
        if rest <= 0:
            raise PipelineError(f"the pipeline did not finish within --timeout {timeout} s")
        return rest

    daemon = Daemon(scratch)
    events = None
    try:
        daemon.wait_ready(min(60, left()))
        status = scratch.toolsmith("status")
        events = Events(status["socket"])
        want = planted_bytes(planted)
        while True:
            sources = scratch.toolsmith("sources")
            src = next((s for s in sources if s.get("source") == "planted"), None)
            if src and src.get("bytes_read", 0) >= want and src.get("lag_bytes", 1) == 0:
                break
            if daemon.proc.poll() is not None:
                raise PipelineError(f"toolsmithd stopped (exit {daemon.proc.returncode}); "
                                    f"its log: {scratch.daemon_log}")
            # Re-check on the next ingest event (or every 5 s, should an event be missed).
            events.wait({"ingest.actions"}, min(5, left()))
        read_s = time.monotonic() - started
        mined = scratch.toolsmith("mine", timeout=left())
        generated = scratch.toolsmith("generate", timeout=left())
        status = scratch.toolsmith("status")
        return {
            "state_dir": status["state_dir"], "mine": mined, "generate": generated,
            "actions_ingested": src.get("actions"), "actions_planted": manifest["actions"],
            "ingest_problems": src.get("problems"), "read_s": round(read_s, 2),
            "total_s": round(time.monotonic() - started, 2),
        }
    finally:
        if events:
            events.close()
        daemon.stop()
        if events:
            # `events.seen` is complete once the socket closed.
            pass


# ---------------------------------------------------------------------------------------------
# Candidates, their dry runs, and the habits.

CASE_NAME = re.compile(r"session (\S+), actions (\d+)-(\d+)")


def latest_attempt(stage):
    attempts = [int(n[len("attempt-"):]) for n in os.listdir(stage)
                if n.startswith("attempt-") and n[len("attempt-"):].isdigit()]
    return os.path.join(stage, f"attempt-{max(attempts)}") if attempts else None


def manifest_field(text, key):
    m = re.search(rf"^\s*{key}:\s*\"?([^\"\n]+)\"?\s*$", text, re.MULTILINE)
    return m.group(1).strip() if m else None


def load_candidate(state_dir, cand):
    stage = os.path.join(state_dir, "staging", cand["id"])
    info = {"id": cand["id"], "tool": cand.get("tool"), "state": cand.get("state"),
            "reason": cand.get("reason"), "pattern": cand.get("pattern"), "occurrences": [],
            "cases": [], "tool_dir": None, "language": "sh", "entrypoint": "run.sh",
            "params": {}}
    try:
        with open(os.path.join(stage, "spec.json"), encoding="utf-8") as f:
            spec = json.load(f)
    except (OSError, json.JSONDecodeError):
        spec = {}
    info["description"] = spec.get("description")
    info["params"] = {p["name"]: p for p in spec.get("params", [])}
    for occ in spec.get("occurrences", []):
        ev = occ.get("evidence", {})
        info["occurrences"].append({"session": ev.get("session"), "first": ev.get("first_seq"),
                                    "last": ev.get("last_seq"), "params": occ.get("params", {}),
                                    "commands": occ.get("commands", [])})
    attempt = latest_attempt(stage) if os.path.isdir(stage) else None
    if attempt:
        tool_dir = os.path.join(attempt, "tool")
        info["tool_dir"] = tool_dir
        try:
            with open(os.path.join(tool_dir, "tool.yaml"), encoding="utf-8") as f:
                text = f.read()
            info["language"] = manifest_field(text, "language") or "sh"
            info["entrypoint"] = manifest_field(text, "entrypoint") or "run.sh"
        except OSError:
            pass
        try:
            with open(os.path.join(tool_dir, "tests", "cases.json"), encoding="utf-8") as f:
                cases = json.load(f).get("cases", [])
        except (OSError, json.JSONDecodeError, AttributeError):
            cases = []
        for case in cases:
            m = CASE_NAME.search(case.get("name", ""))
            if case.get("dry_run") and m:
                info["cases"].append(dict(case, _session=m.group(1), _first=int(m.group(2)),
                                          _last=int(m.group(3))))
    return info


def overlaps(session, first, last, occ):
    seqs = [c["seq"] for c in occ["commands"]]
    return session == occ["session"] and first <= max(seqs) and last >= min(seqs)


def value_of(spec_param, text):
    """A parameter's value from its text in the spec, as the generator derives it."""
    kind = (spec_param or {}).get("kind")

    def scalar(t):
        if kind == "integer":
            try:
                return int(t)
            except ValueError:
                return t
        if kind == "boolean":
            return t in ("1", "true")
        return t
    if (spec_param or {}).get("variadic"):
        return [scalar(t) for t in text.split()]
    return scalar(text)


def params_to_args(params):
    """Parameters as options, as the validation passes them (`--name-with-dashes VALUE`)."""
    args = []
    for name in sorted(params):
        option = "--" + name.replace("_", "-")
        value = params[name]
        if value is True:
            args.append(option)
        elif value is False or value is None:
            continue
        elif isinstance(value, list):
            for item in value:
                args += [option, item if isinstance(item, str) else json.dumps(item)]
        else:
            args += [option, value if isinstance(value, str) else json.dumps(value)]
    return args


def dry_run(scratch, cand, invocation):
    """Runs the candidate's entry point in the sandbox with TOOLSMITH_DRY_RUN=1."""
    interpreter = "python3" if cand["language"] == "python" else "/bin/sh"
    command = [interpreter, f"/tool/{cand['entrypoint']}"] + invocation["args"]
    env_opts = ["--env", "TOOLSMITH_DRY_RUN=1"]
    if invocation.get("stdin"):
        command = ["/bin/sh", "-c",
                   f"printf '%s' \"${STDIN_VAR}\" | {{ unset {STDIN_VAR}; exec \"$@\"; }}",
                   "sh"] + command
        env_opts += ["--env", f"{STDIN_VAR}={invocation['stdin']}"]
    workspace = tempfile.mkdtemp(dir=scratch.workspaces)
    p = scratch.toolsmith("sandbox", *env_opts, "--tool-dir", cand["tool_dir"],
                          "--workspace", "write", workspace, "--timeout", "30", "--",
                          *command, check=False, json_out=False, timeout=90)
    stderr_lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    return {"exit_code": p.returncode, "stdout": p.stdout,
            "stderr_head": stderr_lines[0] if stderr_lines else ""}


def invocation_for(cand, occ):
    """How to call the candidate for a planted occurrence: its own dry-run case for it, else the
    parameters its spec recorded; None when it holds no such occurrence."""
    for case in cand["cases"]:
        if overlaps(case["_session"], case["_first"], case["_last"], occ):
            args = case.get("args")
            if args is None:
                args = params_to_args(case.get("params") or {})
            return {"args": args, "stdin": case.get("stdin"), "from": "tests/cases.json: "
                    + case["name"]}
    for o in cand["occurrences"]:
        if o["session"] is not None and overlaps(o["session"], o["first"], o["last"], occ):
            params = {k: value_of(cand["params"].get(k), v) for k, v in o["params"].items()}
            return {"args": params_to_args(params), "stdin": None,
                    "from": "spec.json occurrence (beyond the derived cases)"}
    return None


def judge_candidate(scratch, cand, habit):
    """For each of the habit's occurrences, what the candidate's dry run prints, compared with
    what the log recorded."""
    results = []
    for k, occ in enumerate(habit["occurrences"]):
        expected = []
        for c in occ["commands"]:
            expected += parse_or_opaque(c["command"])
        inv = invocation_for(cand, occ) if cand["tool_dir"] else None
        if inv is None:
            results.append({"occurrence": k + 1, "session": occ["session"], "reproduced": False,
                            "difference": "the candidate holds no evidence of this occurrence"})
            continue
        ran = dry_run(scratch, cand, inv)
        got = parse_or_opaque(ran["stdout"])
        diff = first_difference(expected, got)
        ok = diff is None and ran["exit_code"] == 0
        entry = {"occurrence": k + 1, "session": occ["session"], "reproduced": ok,
                 "args": inv["args"], "from": inv["from"], "exit_code": ran["exit_code"],
                 "printed": ran["stdout"]}
        if diff is not None:
            entry["difference"] = diff["what"]
            entry["difference_at"] = diff
        if ran["exit_code"] != 0:
            failed = f"the dry run exited {ran['exit_code']}: {ran['stderr_head']}"
            entry["difference"] = (entry["difference"] + f" ({failed})"
                                   if "difference" in entry else failed)
        results.append(entry)
    return results


def habit_patterns(patterns, habit):
    """The mined patterns whose evidence overlaps the habit's occurrences."""
    found = []
    for p in patterns:
        covered = sum(1 for occ in habit["occurrences"]
                      if any(overlaps(e.get("session"), e.get("first_seq", -1),
                                      e.get("last_seq", -1), occ)
                             for e in p.get("evidence", [])))
        if covered:
            found.append({"id": p.get("id"), "kind": p.get("kind"), "score": p.get("score"),
                          "support": p.get("support"), "status": p.get("status"),
                          "steps": p.get("steps"), "occurrences_covered": covered,
                          "rendering_difference": rendering_difference(p, habit)})
    return found


def no_candidate(patterns, habit):
    held = habit_patterns(patterns, habit)
    if not held:
        return "no candidate: no mined pattern holds any of its occurrences"
    top = max(held, key=lambda p: (p["occurrences_covered"], p["score"] or 0))
    text = (f"no candidate: the pattern holding most of its occurrences is {top['id']} "
            f"(score {top['score']}, support {top['support']}, {top['status']}, "
            f"{top['occurrences_covered']}/{len(habit['occurrences'])} occurrences)")
    if top.get("rendering_difference"):
        text += f"; its evidence, as the miner renders it: {top['rendering_difference']}"
    return text


def rendering_difference(pattern, habit):
    """The first place where the commands a pattern's evidence shows (the miner's rendering of
    each occurrence) differ from what the log recorded; None when they all agree."""
    for k, occ in enumerate(habit["occurrences"]):
        for e in pattern.get("evidence", []):
            if not overlaps(e.get("session"), e.get("first_seq", -1), e.get("last_seq", -1), occ):
                continue
            expected = []
            for c in occ["commands"]:
                expected += parse_or_opaque(c["command"])
            got = []
            for c in e.get("commands", []):
                got += parse_or_opaque(c)
            diff = first_difference(expected, got)
            if diff:
                return f"occurrence {k + 1}: {diff['what']}"
    return None


def measure(scratch, manifest, run):
    cands = scratch.toolsmith("candidates")
    patterns = scratch.toolsmith("patterns", "--limit", "100000")
    infos = [load_candidate(run["state_dir"], c) for c in cands]
    habits_out = []
    matched_ids = set()
    for habit in manifest["habits"]:
        mine = []
        for cand in infos:
            covered = sum(
                1 for occ in habit["occurrences"]
                if any(o["session"] is not None and overlaps(o["session"], o["first"], o["last"], occ)
                       for o in cand["occurrences"])
                or any(overlaps(c["_session"], c["_first"], c["_last"], occ) for c in cand["cases"]))
            if covered:
                mine.append((cand, covered))
                matched_ids.add(cand["id"])
        judged = []
        for cand, covered in mine:
            results = judge_candidate(scratch, cand, habit)
            judged.append({"id": cand["id"], "tool": cand["tool"], "state": cand["state"],
                           "reason": cand["reason"], "pattern": cand["pattern"],
                           "description": cand.get("description"),
                           "occurrences_covered": covered,
                           "occurrences_reproduced": sum(r["reproduced"] for r in results),
                           "results": results})
        awaiting = [j for j in judged if j["state"] == "awaiting-review"]
        # The candidate the habit is judged by: awaiting review first, then the one that
        # reproduces most, then covers most.
        ranked = sorted(judged, key=lambda j: (j["state"] != "awaiting-review",
                                               -j["occurrences_reproduced"],
                                               -j["occurrences_covered"], j["id"]))
        best = ranked[0] if ranked else None
        n = len(habit["occurrences"])
        reproduced = bool(best and best["state"] == "awaiting-review"
                          and best["occurrences_reproduced"] == n)
        first_diff = None
        if best and not reproduced:
            bad = next((r for r in best["results"] if not r["reproduced"]), None)
            if bad:
                first_diff = f"occurrence {bad['occurrence']}: {bad['difference']}"
            elif best["state"] != "awaiting-review":
                first_diff = f"{best['state']}: {best['reason']}"
        habits_out.append({
            "id": habit["id"], "covers": habit.get("covers"), "occurrences": n,
            "sessions": habit.get("sessions"),
            "candidates_awaiting_review": len(awaiting),
            "candidates_failed": len([j for j in judged if j["state"] == "failed"]),
            "candidates_total": len(judged),
            "judged_by": best["id"] if best else None,
            "reproduced_word_for_word": reproduced,
            "occurrences_reproduced": best["occurrences_reproduced"] if best else 0,
            "first_difference": first_diff if best else no_candidate(patterns, habit),
            "candidates": judged,
            "patterns": habit_patterns(patterns, habit),
        })
    unmatched = [{"id": c["id"], "tool": c["tool"], "state": c["state"],
                  "description": c.get("description")}
                 for c in infos if c["id"] not in matched_ids]
    n = len(habits_out)
    totals = {
        "habits": n,
        "habits_reproduced_word_for_word": sum(h["reproduced_word_for_word"] for h in habits_out),
        "share_reproduced_word_for_word": round(
            sum(h["reproduced_word_for_word"] for h in habits_out) / n, 3) if n else 0.0,
        "candidates_awaiting_review_per_habit": round(
            sum(h["candidates_awaiting_review"] for h in habits_out) / n, 3) if n else 0.0,
        "habits_with_exactly_one_candidate": sum(
            h["candidates_awaiting_review"] == 1 for h in habits_out),
        "candidates": len(infos),
        "candidates_awaiting_review": sum(c["state"] == "awaiting-review" for c in infos),
        "candidates_matching_no_habit": len(unmatched),
    }
    return {"totals": totals, "habits": habits_out, "unmatched_candidates": unmatched}


# ---------------------------------------------------------------------------------------------
# Output.


def print_text(report, out):
    run, totals = report["run"], report["totals"]
    w = out.write
    w(f"planted: {report['planted']} ({run['actions_planted']} actions; ingested "
      f"{run['actions_ingested']}, problems {run['ingest_problems']}); binaries {report['bin']}\n")
    w(f"mined {run['mine'].get('patterns')} patterns; {totals['candidates']} candidates, "
      f"{totals['candidates_awaiting_review']} awaiting review; pipeline {run['total_s']} s\n\n")
    for h in report["habits"]:
        mark = "yes" if h["reproduced_word_for_word"] else "NO "
        w(f"{h['id']:<20} candidates {h['candidates_awaiting_review']} awaiting review"
          f" (+{h['candidates_failed']} failed)  word for word: {mark} "
          f"({h['occurrences_reproduced']}/{h['occurrences']} occurrences)\n")
        for c in h["candidates"]:
            w(f"    {c['id']} {c['tool']} [{c['state']}] pattern {c['pattern']}: "
              f"{c['occurrences_reproduced']}/{c['occurrences_covered']} of the occurrences it "
              f"holds reproduced\n")
            bad = next((r for r in c["results"] if not r["reproduced"]
                        and ("difference_at" in r or "exited" in r.get("difference", ""))),
                       None)
            if bad and c["id"] != h["judged_by"]:
                w(f"        first difference: occurrence {bad['occurrence']}: "
                  f"{bad['difference']}\n")
        if h["first_difference"]:
            w(f"    first difference: {h['first_difference']}\n")
        for p in h["patterns"]:
            w(f"    pattern {p['id']} {p['kind']} support {p['support']} score {p['score']} "
              f"[{p['status']}] holds {p['occurrences_covered']}/{h['occurrences']}: "
              f"{' → '.join(p['steps'] or [])}\n")
        if not h["patterns"]:
            w("    no mined pattern holds any of its occurrences\n")
    if report["unmatched_candidates"]:
        w("\ncandidates matching no planted habit:\n")
        for c in report["unmatched_candidates"]:
            w(f"    {c['id']} {c['tool']} [{c['state']}]: {c['description']}\n")
    w(f"\nhabits reproduced word for word: {totals['habits_reproduced_word_for_word']}/"
      f"{totals['habits']} = {100 * totals['share_reproduced_word_for_word']:.0f}% (goal 100%)\n")
    w(f"candidates awaiting review per habit: {totals['candidates_awaiting_review_per_habit']:.2f}"
      f" (goal 1.0); habits with exactly one: {totals['habits_with_exactly_one_candidate']}/"
      f"{totals['habits']}\n")


def default_bindir():
    for d in [os.path.join(REPO, "target", "release")]:
        if os.path.exists(os.path.join(d, "toolsmithd")):
            return d
    found = shutil.which("toolsmithd")
    return os.path.dirname(found) if found else None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("planted", help="directory written by scripts/plant_sessions.py")
    ap.add_argument("--bin", help="directory holding toolsmith, toolsmithd and "
                    "toolsmith-sandbox-helper (default: target/release, else $PATH)")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--timeout", type=float, default=900,
                    help="seconds the pipeline may take in all (default 900)")
    ap.add_argument("--policy", metavar="FILE",
                    help="policy file for validation (generate.policy), e.g. one whose [grants] "
                         "hosts lists the package registry a recovery installs from")
    ap.add_argument("--extra-config", metavar="FILE",
                    help="TOML appended to the scratch configuration (e.g. a [mine] table)")
    args = ap.parse_args(argv)
    habits_file = os.path.join(args.planted, "habits.json")
    try:
        with open(habits_file, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        ap.error(f"cannot read {habits_file} ({e}): write the sessions with "
                 "scripts/plant_sessions.py first")
    bindir = os.path.abspath(args.bin) if args.bin else default_bindir()
    if not bindir or not all(os.access(os.path.join(bindir, b), os.X_OK)
                             for b in ("toolsmith", "toolsmithd")):
        print(f"faithful_check: no toolsmith and toolsmithd in {bindir or 'target/release or PATH'}"
              ": build them (cargo build --release) or give --bin DIR", file=sys.stderr)
        return 1
    scratch = Scratch(args.planted, bindir, args.keep, args.extra_config, args.policy)
    try:
        run = run_pipeline(scratch, os.path.abspath(args.planted), manifest, args.timeout)
        report = {"planted": os.path.abspath(args.planted), "bin": bindir,
                  "scratch": scratch.root if args.keep else None, "run": run}
        report.update(measure(scratch, manifest, run))
    except PipelineError as e:
        print(f"faithful_check: the pipeline could not be run: {e}"
              + ("" if args.keep else " (rerun with --keep to look at the scratch directory)"),
              file=sys.stderr)
        return 1
    finally:
        scratch.cleanup()
    if args.json:
        json.dump(report, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print_text(report, sys.stdout)
        if args.keep:
            print(f"scratch directory kept: {scratch.root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
