"""`toolsmith mcp` driven by the official Python MCP SDK (the `mcp` package pinned in
tests/requirements-mcp.txt).

Run by tests/it/mcp.rs, in an isolated environment whose registry holds one approved tool and one
proposal awaiting review:

    python3 tests/mcp_client.py TOOLSMITH STATE_DIR BUILD_TOOL NEW_TOOL NEW_CANDIDATE

Initializes a session, lists the tools, calls the approved one (a success and a failure),
approves the proposal with the CLI while connected, waits for
notifications/tools/list_changed, and lists again. Prints "ok: <step>" per step; exits non-zero
with the reason on the first step that fails.
"""

import os
import subprocess
import sys

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

PATIENCE_S = 20


def fail(message):
    print(f"FAILED: {message}", flush=True)
    sys.exit(1)


def text_of(result):
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def main(toolsmith, state, build, new_tool, new_candidate):
    changed = anyio.Event()

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and isinstance(
            getattr(message, "root", message), types.ToolListChangedNotification
        ):
            changed.set()
        elif isinstance(message, types.ToolListChangedNotification):
            changed.set()

    server = StdioServerParameters(
        command=toolsmith,
        args=["--state", state, "mcp"],
        env=dict(os.environ),
        cwd=os.getcwd(),
    )
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            with anyio.fail_after(PATIENCE_S):
                init = await session.initialize()
            tools_cap = init.capabilities.tools
            if tools_cap is None or not tools_cap.list_changed:
                fail(f"tools.listChanged not advertised: {init.capabilities}")
            print(f"ok: initialized ({init.protocol_version}, {init.server_info.name})", flush=True)

            listed = [t.name for t in (await session.list_tools()).tools]
            if listed != [build, "toolsmith_search", "toolsmith_run", "toolsmith_request", "toolsmith_request_status", "toolsmith_proposals"]:
                fail(f"tools/list gave {listed}")
            print(f"ok: listed {listed}", flush=True)

            result = await session.call_tool(build, {"dir": "core"})
            if result.is_error or "built core" not in text_of(result):
                fail(f"the call did not build core: {result}")
            print("ok: called", build, flush=True)

            result = await session.call_tool(build, {"dir": "missing"})
            if not result.is_error or "exit status" not in text_of(result):
                fail(f"a failing run was not an error result: {result}")
            print("ok: failed as a result:", text_of(result).splitlines()[0], flush=True)

            approve = subprocess.run(
                [toolsmith, "--state", state, "approve", new_candidate],
                capture_output=True,
                text=True,
                check=False,
            )
            if approve.returncode != 0:
                fail(f"toolsmith approve: {approve.stderr}")
            with anyio.move_on_after(PATIENCE_S):
                await changed.wait()
            if not changed.is_set():
                fail("no notifications/tools/list_changed after the approval")
            print("ok: list changed", flush=True)

            listed = [t.name for t in (await session.list_tools()).tools]
            if new_tool not in listed:
                fail(f"{new_tool} not in the next tools/list: {listed}")
            print(f"ok: listed the new tool {listed}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 6:
        fail(__doc__)
    anyio.run(main, *sys.argv[1:])
