"""``python -m starweaver inspect MODULE_OR_FILE [--provider NAME] [--strict]``.

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
import sys
import traceback
from pathlib import Path
from collections.abc import Iterable
from types import ModuleType
from typing import Any, cast

from .exceptions import StarweaverError
from .providers import PROVIDERS, Provider, render
from .tools import BaseTool, Tool

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


def inspect(target: str, provider: Provider | None, strict: bool) -> list[dict[str, object]]:
    tools = tools_of(load(target))
    if not tools:
        raise InspectError(f"{target} holds no tools (no @tool functions or BaseTool instances at its top level or in its lists)")
    if provider is not None:
        return [render(tool, provider, strict=True if strict else None) for tool in tools]
    definitions: list[dict[str, object]] = []
    for tool in tools:
        definition: dict[str, object] = tool.definition.to_dict()
        if strict:
            # The strict transform is the renderers'; OpenAI's format carries it unchanged.
            definition["parameters"] = render(tool, "openai-chat", strict=True)["function"]["parameters"]
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
    args = parser.parse_args(argv)
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
