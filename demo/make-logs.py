#!/usr/bin/env python3
"""Writes the demo's agent logs: five Claude Code sessions (the transcript format of Claude Code
1.0.x, `~/.claude/projects/<dir>/<session>.jsonl`) in a small Makefile project, with two habits
for toolsmith to find:

- build then test one package (`make build -C <pkg>`, `make test -C <pkg>`), the package varying;
- `python3 -m pytest tests/` failing on a missing module, `pip install requests`, pytest again.

The files are committed (`demo/claude-code/`); `toolsmith demo` embeds them. Run this again only
to change them: `python3 demo/make-logs.py`.
"""
import json
import os
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "claude-code")
CWD = "/home/dev/webshop"

rng_state = [7]


def ident(prefix, n=24):
    # Deterministic ids: the files do not change when regenerated.
    rng_state[0] = (rng_state[0] * 6364136223846793005 + 1442695040888963407) % (1 << 64)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    x, s = rng_state[0], ""
    for _ in range(n):
        s += alphabet[x % len(alphabet)]
        x //= len(alphabet)
        if x == 0:
            rng_state[0] = (rng_state[0] * 6364136223846793005 + 1) % (1 << 64)
            x = rng_state[0]
    return prefix + s


def uid():
    h = ident("", 32).encode().hex()[:32]
    return str(uuid.UUID(h))


def session(index, steps, start_minute):
    sid = uid()
    lines, parent = [], None
    minute = start_minute
    second = 0

    def ts():
        nonlocal second
        second += 7
        return "2026-11-%02dT%02d:%02d:%02d.%03dZ" % (
            10 + index, 9 + minute // 60, minute % 60, second % 60, (second * 37) % 1000)

    def record(kind, message, extra=None):
        nonlocal parent
        u = uid()
        r = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": CWD,
             "sessionId": sid, "version": "1.0.98", "gitBranch": "main"}
        if kind == "assistant":
            r.update({"message": message, "requestId": ident("req_"), "type": "assistant",
                      "uuid": u, "timestamp": ts()})
        else:
            r.update({"type": "user", "message": message, "uuid": u, "timestamp": ts()})
        if extra:
            r.update(extra)
        parent = u
        lines.append(json.dumps(r))

    record("user", {"role": "user", "content": steps[0]})
    for tool, tool_input, output, ok, ms in steps[1:]:
        call = ident("toolu_")
        record("assistant", {
            "id": ident("msg_"), "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-20250514",
            "content": [{"type": "tool_use", "id": call, "name": tool, "input": tool_input}],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 4, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 12000, "output_tokens": 60,
                      "service_tier": "standard"}})
        if tool == "Bash":
            content = output if ok else "Exit code 1\n" + output
            extra = {"toolUseResult": {"stdout": output if ok else "", "stderr": "" if ok else output,
                                       "interrupted": False, "isImage": False}}
        else:
            content = output
            extra = {"toolUseResult": {"type": "text", "file": {"filePath": tool_input.get("file_path", ""),
                                                                "content": output}}}
        record("user", {"role": "user", "content": [
            {"tool_use_id": call, "type": "tool_result", "content": content, "is_error": not ok}]},
            extra)
    return sid, "\n".join(lines) + "\n"


def bash(command, output="", ok=True, ms=800, description=""):
    return ("Bash", {"command": command, "description": description or command}, output, ok, ms)


def read(path, text):
    return ("Read", {"file_path": CWD + "/" + path}, text, True, 5)


def build_then_test(pkg):
    return [
        bash(f"make build -C {pkg}", f"make: Entering directory '{CWD}/{pkg}'\ncc -O2 -o {pkg} main.c\n"
             f"make: Leaving directory '{CWD}/{pkg}'", description=f"Build {pkg}"),
        bash(f"make test -C {pkg}", f"make: Entering directory '{CWD}/{pkg}'\n./run-tests\n"
             f"12 passed\nmake: Leaving directory '{CWD}/{pkg}'", description=f"Test {pkg}"),
    ]


MISSING = ("ImportError while loading conftest '/home/dev/webshop/tests/conftest.py'.\n"
           "tests/conftest.py:3: in <module>\n    import requests\n"
           "E   ModuleNotFoundError: No module named 'requests'")


def pytest_fix():
    return [
        bash("python3 -m pytest tests/", MISSING, ok=False, ms=1400, description="Run the API tests"),
        bash("pip install requests", "Collecting requests\nInstalling collected packages: requests\n"
             "Successfully installed requests-2.32.3", ms=3100, description="Install the missing module"),
        bash("python3 -m pytest tests/", "collected 24 items\n\ntests/test_api.py ........................ "
             "[100%]\n\n24 passed in 1.92s", ms=2300, description="Run the API tests again"),
    ]


SESSIONS = [
    ["Fix the rounding bug in the cart total",
     read("core/cart.c", "int total(...)"), bash("git status --short", " M core/cart.c"),
     *build_then_test("core"), *pytest_fix(), bash("git diff --stat", " core/cart.c | 4 ++--")],
    ["Add a --json flag to the cli",
     read("cli/main.c", "int main(...)"), *build_then_test("cli"),
     bash("git log --oneline -n 5", "a1b2c3d cart: round half up"), *pytest_fix()],
    ["The web package does not build after the upgrade",
     bash("git status --short", " M web/Makefile"), *build_then_test("web"),
     read("web/Makefile", "build:\n\tcc -o web main.c"), *build_then_test("web")],
    ["Make the store cache expire after an hour",
     read("store/cache.c", "#define TTL 600"), *build_then_test("store"), *pytest_fix()],
    ["Rename the cli's config file",
     bash("git grep -n config.ini", "cli/main.c:40: \"config.ini\""), *build_then_test("cli"),
     bash("git status --short", " M cli/main.c")],
]


def main():
    os.makedirs(OUT, exist_ok=True)
    for name in os.listdir(OUT):
        os.remove(os.path.join(OUT, name))
    for i, steps in enumerate(SESSIONS):
        sid, text = session(i, steps, 5 * i)
        with open(os.path.join(OUT, f"session-{i + 1}.jsonl"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
