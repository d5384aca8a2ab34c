"""A module `serve-mcp` serves with its top-level `hooks`: every served call runs through them."""

from __future__ import annotations

from starweaver import Hooks, ToolCall, ToolContext, ToolResult, tool


@tool
def deploy(env: str) -> str:
    """Deploy to an environment."""
    return f"deployed to {env}"


class StagingOnly(Hooks):
    def before_call(self, ctx: ToolContext, call: ToolCall) -> dict[str, object] | ToolResult | None:
        if call.arguments.get("env") == "nowhere":
            return ToolResult("nothing to deploy")
        return {**call.arguments, "env": "staging"}


hooks = [StagingOnly()]
