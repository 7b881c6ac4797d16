"""An agent asks `toolsmith mcp` for a tool it lacks, driven by the official Python MCP SDK (the
`mcp` package pinned in tests/requirements-mcp.txt).

Run by tests/it/mcp.rs, in an isolated environment whose registry holds one proposal awaiting
review (OTHER_CANDIDATE) and no template-less generation (no model configured):

    python3 tests/mcp_request_client.py TOOLSMITH STATE_DIR OTHER_CANDIDATE

Initializes a session as the agent "pytest-agent" 7.0, reads the instructions (one proposal
awaits review), asks for a tool without examples (refused: no model), asks for one with
examples, follows its status to awaiting-review, lists the proposals (the request new, the other
told by the instructions already; a second listing new to nobody), approves the request with the
CLI while connected, waits for notifications/tools/list_changed, and calls the new tool. Prints
"ok: <step>" per step and finally "candidate: <id>" and "tool: <name>"; exits non-zero with the
reason on the first step that fails.
"""

import json
import os
import subprocess
import sys

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

PATIENCE_S = 60


def fail(message):
    print(f"FAILED: {message}", flush=True)
    sys.exit(1)


def text_of(result):
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def structured(result):
    if result.is_error:
        fail(f"an error result: {text_of(result)}")
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(text_of(result))


async def main(toolsmith, state, other):
    changed = anyio.Event()

    async def on_message(message):
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            changed.set()

    server = StdioServerParameters(
        command=toolsmith,
        args=["--state", state, "mcp"],
        env=dict(os.environ),
        cwd=os.getcwd(),
    )
    agent = types.Implementation(name="pytest-agent", version="7.0")
    async with stdio_client(server) as (read, write):
        async with ClientSession(
            read, write, message_handler=on_message, client_info=agent
        ) as session:
            with anyio.fail_after(PATIENCE_S):
                init = await session.initialize()
            instructions = init.instructions or ""
            if "1 proposed tool awaits" not in instructions or "toolsmith ui" not in instructions:
                fail(f"the instructions do not tell of the proposal: {instructions!r}")
            print("ok: instructions tell of 1 proposal", flush=True)

            listed = [t.name for t in (await session.list_tools()).tools]
            for fixed in ["toolsmith_request", "toolsmith_request_status", "toolsmith_proposals"]:
                if fixed not in listed:
                    fail(f"{fixed} not in tools/list: {listed}")
            print(f"ok: listed {listed}", flush=True)

            refused = await session.call_tool(
                "toolsmith_request", {"description": "Build one package"}
            )
            if not refused.is_error or "needs a model" not in text_of(refused):
                fail(f"a request without examples was not refused for want of a model: {refused}")
            print("ok: no examples, no model:", text_of(refused).splitlines()[0], flush=True)

            asked = structured(
                await session.call_tool(
                    "toolsmith_request",
                    {
                        "description": "Build one package",
                        "examples": ["make build -C core", "make build -C cli"],
                        "inputs": [{"name": "dir", "description": "the package to build"}],
                    },
                )
            )
            if asked.get("state") != "queued" or not str(asked.get("id", "")).startswith("c-"):
                fail(f"the request was not answered with its id, queued: {asked}")
            candidate = asked["id"]
            print(f"ok: requested {candidate}", flush=True)

            seen = []
            status = {}
            with anyio.fail_after(PATIENCE_S):
                while status.get("state") != "awaiting-review":
                    status = structured(
                        await session.call_tool("toolsmith_request_status", {"id": candidate})
                    )
                    if not seen or seen[-1] != status["state"]:
                        seen.append(status["state"])
                    if status["state"] in ("failed", "rejected"):
                        fail(f"the request ended {status}")
                    if status["state"] != "awaiting-review":
                        await anyio.sleep(0.1)
            tool = status["tool"]
            print(f"ok: status went {' -> '.join(seen)}: {tool}", flush=True)

            proposals = structured(await session.call_tool("toolsmith_proposals", {}))
            by_id = {p["id"]: p for p in proposals["awaiting_review"]}
            mine = by_id.get(candidate)
            if mine is None or other not in by_id:
                fail(f"the proposals are not both listed: {proposals}")
            # The status answered awaiting-review already: this session was told of it there.
            if mine["origin"] != "request" or mine["requested_by"] != "pytest-agent 7.0":
                fail(f"the request's proposal is not this agent's: {mine}")
            if not mine["this_session"] or by_id[other]["new"]:
                fail(f"what this session was told is not marked: {proposals}")
            again = structured(await session.call_tool("toolsmith_proposals", {}))
            if any(p["new"] for p in again["awaiting_review"]):
                fail(f"a proposal was told twice: {again}")
            print("ok: proposals listed, each told once", flush=True)

            approve = subprocess.run(
                [toolsmith, "--state", state, "approve", candidate],
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
            if tool not in listed:
                fail(f"{tool} not in the next tools/list: {listed}")
            result = await session.call_tool(tool, {"dir": "core"})
            if result.is_error or "built core" not in text_of(result):
                fail(f"the new tool did not build core: {result}")
            print(f"ok: called the new tool {tool}", flush=True)

            status = structured(
                await session.call_tool("toolsmith_request_status", {"id": candidate})
            )
            if status["state"] != "approved":
                fail(f"the status after approval is {status}")
            print("ok: status approved", flush=True)
            print(f"candidate: {candidate}", flush=True)
            print(f"tool: {tool}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        fail(__doc__)
    anyio.run(main, *sys.argv[1:])
