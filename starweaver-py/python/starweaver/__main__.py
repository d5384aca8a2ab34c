"""``python -m starweaver inspect MODULE_OR_FILE [--provider NAME] [--strict]`` and
``python -m starweaver serve-mcp MODULE_OR_FILE [--name NAME] [--http HOST:PORT] [--deps MODULE:FACTORY]``.

``serve-mcp`` serves the module's tools (and its static toolsets), resources, resource
templates and prompts (``starweaver.mcp.resource``, ``resource_template``, ``prompt``) to MCP clients over stdio,
or with ``--http`` over streamable HTTP at ``http://HOST:PORT/mcp`` (the URL is printed on
stderr once it is listening): each call runs through the same scheduler as in an agent.
The tools' ``ctx.deps`` is ``FACTORY()`` with ``--deps``, else the module's top-level ``deps``;
every call runs through the module's top-level ``hooks`` (``starweaver.hooks``), if any.

Prints, as JSON, the definitions of the tools a module holds (``@tool`` functions and
``BaseTool`` instances at its top level or in its top-level lists), or with ``--provider`` those tools in that
provider's format. A target that cannot be imported or holds no tools is a clear message on
stderr and exit status 2; a tool that cannot be rendered, exit status 1.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ._served import SERVING, MCPPrompt, MCPResource, MCPResourceTemplate
from .exceptions import StarweaverError
from .providers import PROVIDERS, Provider, render
from .tools import BaseTool, Tool
from .toolsets import Toolset

if TYPE_CHECKING:
    from ._native import NativeHooks, NativeMcpService
    from .types import JsonObject

__all__ = ["main"]


class InspectError(Exception):
    """The target cannot be inspected; the message says why."""


def load(target: str) -> ModuleType:
    """Imports ``target``: a ``.py`` file path, or a dotted module name."""
    path = Path(target)
    try:
        if target.endswith(".py") or path.is_file():
            return _load_file(path, target)
        return importlib.import_module(target)
    except InspectError:
        raise
    except ModuleNotFoundError as error:
        if error.name is not None and target.startswith(error.name):
            raise InspectError(f"no module named {target!r}") from error
        raise InspectError(f"importing {target} failed: {_last_line(error)}") from error
    except Exception as error:  # noqa: BLE001 - any import-time failure is the user's to see
        raise InspectError(f"importing {target} failed: {_last_line(error)}") from error


def _load_file(path: Path, target: str) -> ModuleType:
    if not path.is_file():
        raise InspectError(f"no such file: {target}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise InspectError(f"cannot import {target}: not a Python source file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    # The file's own directory first, as `python file.py` would have it.
    sys.path.insert(0, str(path.resolve().parent))
    spec.loader.exec_module(module)
    return module


def _last_line(error: BaseException) -> str:
    return traceback.format_exception_only(type(error), error)[-1].strip()


def tools_of(module: ModuleType) -> list[Tool[..., Any] | BaseTool]:
    """The tools at the module's top level or in its top-level lists and tuples (``TOOLS =
    [...]``), in the order they appear, each once."""
    found: list[Tool[..., Any] | BaseTool] = []
    for value in vars(module).values():
        items = cast("Iterable[object]", value) if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if isinstance(item, (Tool, BaseTool)) and all(item is not seen for seen in found):
                found.append(cast("Tool[..., Any] | BaseTool", item))
    return found


def toolsets_of(module: ModuleType) -> list[Toolset]:
    """The toolsets at the module's top level, each once."""
    return _top_level(module, Toolset)


T = TypeVar("T")


def _top_level(module: ModuleType, kind: type[T]) -> list[T]:
    """The module's top-level values of ``kind``, in the order they appear, each once."""
    found: list[T] = []
    for value in vars(module).values():
        if isinstance(value, kind) and all(value is not seen for seen in found):
            found.append(value)
    return found


def dependencies_of(module: ModuleType, target: str, factory: str | None) -> object:
    """What served tools get as ``ctx.deps``: ``factory()`` for ``--deps MODULE:FACTORY``,
    else the module's own top-level ``deps``, else ``None``."""
    if factory is None:
        return getattr(module, "deps", None)
    where, _, attribute = factory.rpartition(":")
    if not where or not attribute:
        raise InspectError(
            f"--deps {factory}: expected MODULE_OR_FILE:FACTORY, a callable that returns the dependencies"
        )
    make = getattr(module if where in (target, module.__name__) else load(where), attribute, None)
    if not callable(make):
        raise InspectError(f"--deps {factory}: `{attribute}` is not a callable in {where}")
    try:
        return make()
    except Exception as error:  # noqa: BLE001 (the factory is the user's: any failure is reported by name)
        raise InspectError(f"--deps {factory}: the factory raised {type(error).__name__}: {error}") from error


def hooks_of(module: ModuleType) -> list[NativeHooks]:
    """The hooks every served call runs through: the module's top-level ``hooks`` (a list
    of hook objects, or one), else none."""
    from .hooks import native_hooks

    hooks: object = getattr(module, "hooks", ())
    if isinstance(hooks, ModuleType):  # `from starweaver import hooks` names the module, not hooks
        return []
    return native_hooks(
        cast("list[object] | tuple[object, ...]", hooks) if isinstance(hooks, (list, tuple)) else [hooks]
    )


def serve_mcp(target: str, name: str | None, http: str | None = None, deps: str | None = None) -> None:
    """Serves ``target``'s tools over stdio until the client disconnects, or over HTTP at
    ``http`` (``HOST:PORT``) until interrupted; the tools get ``dependencies_of(deps)`` as
    ``ctx.deps``."""
    import asyncio

    from ._native import NativeMcpService

    module = load(target)
    toolsets = toolsets_of(module)
    # A tool at the top level that a served toolset also holds is served once, as the
    # toolset shows it (its prefix, its approval policy).
    in_toolsets = {id(member) for toolset in toolsets for member in toolset.members}
    tools = [tool for tool in tools_of(module) if id(tool) not in in_toolsets]
    resources: list[MCPResource[..., object]] = _top_level(module, MCPResource)
    templates: list[MCPResourceTemplate[..., object]] = _top_level(module, MCPResourceTemplate)
    prompts: list[MCPPrompt[..., object]] = _top_level(module, MCPPrompt)
    if not (tools or toolsets or resources or templates or prompts):
        raise InspectError(f"{target} holds no tools, toolsets, resources or prompts to serve")
    service = NativeMcpService(
        name or module.__name__,
        [tool.native for tool in tools],
        toolsets=[t.native for t in toolsets],
        deps=dependencies_of(module, target, deps),
        resources=[r.native for r in resources],
        resource_templates=[t.native for t in templates],
        prompts=[p.native for p in prompts],
        hooks=hooks_of(module),
    )
    SERVING.append(service)
    try:
        asyncio.run(_serve(service, http))
    except KeyboardInterrupt:
        pass
    finally:
        SERVING.remove(service)


async def _serve(service: NativeMcpService, http: str | None) -> None:
    if http is None:
        serving = service.serve_stdio()
        _stdio_off_the_protocol()
        await serving
        return
    try:
        serving = service.serve_http(http, ready=_announce)
    except OSError as error:
        raise InspectError(f"cannot listen on {http}: {error}") from error
    await serving


def _stdio_off_the_protocol() -> None:
    """Points fd 1 and ``sys.stdout`` at stderr, and fd 0 at the null device, while serving
    stdio: the protocol keeps its own copies of both (``serve_stdio`` took them), and a
    tool's ``print``, a library writing to fd 1 or reading fd 0, or a child process doing
    either would otherwise corrupt it (or change the mode it is read in). Elsewhere than
    POSIX the protocol is served on the process's own stdio, which stays as it is."""
    if os.name != "posix":
        return
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


def _announce(url: str) -> None:
    print(f"starweaver serve-mcp: serving MCP at {url}", file=sys.stderr, flush=True)


def inspect(target: str, provider: Provider | None, strict: bool) -> list[Mapping[str, object]]:
    tools = tools_of(load(target))
    if not tools:
        raise InspectError(
            f"{target} holds no tools (no @tool functions or BaseTool instances at its top level or in its lists)"
        )
    if provider is not None:
        return [render(tool, provider, strict=True if strict else None) for tool in tools]
    definitions: list[Mapping[str, object]] = []
    for tool in tools:
        definition: dict[str, object] = dict(tool.definition.to_dict())
        if strict:
            # The strict transform is the renderers'; OpenAI's format carries it unchanged.
            function = cast("JsonObject", render(tool, "openai-chat", strict=True)["function"])  # always an object
            definition["parameters"] = function["parameters"]
            definition["strict"] = True
        definitions.append(definition)
    return definitions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m starweaver", description="Starweaver tools.")
    commands = parser.add_subparsers(dest="command", required=True)
    inspect_cmd = commands.add_parser("inspect", help="print the definitions of a module's tools as JSON")
    inspect_cmd.add_argument("target", metavar="MODULE_OR_FILE", help="a dotted module name or a .py file")
    inspect_cmd.add_argument("--provider", choices=PROVIDERS, help="render in this provider's tool format")
    inspect_cmd.add_argument("--strict", action="store_true", help="force strict mode (an error if a schema cannot be)")
    serve_cmd = commands.add_parser("serve-mcp", help="serve a module's tools to MCP clients (stdio, or HTTP)")
    serve_cmd.add_argument("target", metavar="MODULE_OR_FILE", help="a dotted module name or a .py file")
    serve_cmd.add_argument("--name", help="the server name clients see (default: the module's)")
    serve_cmd.add_argument(
        "--http", metavar="HOST:PORT", help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio"
    )
    serve_cmd.add_argument(
        "--deps",
        metavar="MODULE_OR_FILE:FACTORY",
        help="call FACTORY() for the tools' ctx.deps (default: the served module's top-level `deps`)",
    )
    args = parser.parse_args(argv)
    if args.command == "serve-mcp":
        try:
            serve_mcp(args.target, args.name, args.http, args.deps)
        except (InspectError, StarweaverError) as error:
            print(f"starweaver serve-mcp: {error}", file=sys.stderr)
            return 2
        return 0
    try:
        definitions = inspect(args.target, args.provider, args.strict)
    except InspectError as error:
        print(f"starweaver inspect: {error}", file=sys.stderr)
        return 2
    except StarweaverError as error:
        print(f"starweaver inspect: {error}", file=sys.stderr)
        return 1
    print(json.dumps(definitions, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
