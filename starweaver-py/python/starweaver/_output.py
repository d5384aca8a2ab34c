"""Typed output (DESIGN.md §17): ``create_agent(output_type=...)``'s members as the output
tools the runtime offers (``final_result``, or ``final_result_<Name>`` for each member of a
union), the check that runs the agent's output validators, and the decoder that gives
``RunResult.output`` its type.

A member type's output tool takes the type's JSON Schema (under a ``response`` key when it
is not an object with properties) and validates the call with pydantic, called in place by
the runtime, so a failure is the call's ``invalid_arguments`` return naming the field. An output function is a tool as
``@tool`` makes it; its return value is the output.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, TypeAlias

import pydantic
import pydantic_core

from ._native import NativeOutputSpec, NativeTool, ToolContext
from ._schema import invalid, tool_schema, type_hints
from .exceptions import InvalidArguments, RegistrationError
from .output import NativeOutput, PromptedOutput
from .tools import Tool, native_tool

__all__ = ["OutputSpec", "OutputValidator"]

#: An output validator: ``(ctx, output)`` to the output (changed or not), sync or async;
#: raising ``ModelRetry`` has the model correct its output.
OutputValidator: TypeAlias = "Callable[[ToolContext[Any], Any], Any | Awaitable[Any]]"

#: A member type as the native layer takes it: its output tool's name, description and
#: parameters, and what turns the tool's arguments into the output's JSON.
_NativeType: TypeAlias = "tuple[str, str | None, dict[str, Any], Callable[[dict[str, Any]], Any]]"


class _Member:
    """One member of the output: its output tool (an output function's, or a type's for
    the native layer to make), and what decodes the tool's JSON value into the Python
    value (``None``: the JSON as is)."""

    def __init__(self, name: str, native: NativeTool | _NativeType, adapter: pydantic.TypeAdapter[Any] | None) -> None:
        self.name = name
        self.native = native
        self.adapter = adapter

    def decode(self, value: object) -> object:
        return value if self.adapter is None else self.adapter.validate_python(value)

    def encode(self, output: object) -> object:
        if self.adapter is None:
            return pydantic_core.to_jsonable_python(output)
        return self.adapter.dump_python(output, mode="json")


def _union_members(output_type: object) -> list[object]:
    # `NativeOutput([A, B])` holds its members as a list.
    if isinstance(output_type, list):
        members: list[object] = typing.cast("list[object]", output_type)
        return [m for member in members for m in _union_members(member)]
    if typing.get_origin(output_type) in (typing.Union, types.UnionType):
        return list(typing.get_args(output_type))
    return [output_type]


def _tool_name_part(name: str) -> str:
    """A member's name as the runtime puts it in a tool name (`output.rs`'s
    `tool_name_part`): anything but ASCII letters, digits and ``-`` (the ``[``, ``]`` and
    ``,`` of a generic type's name) as ``_``."""
    return re.sub(r"[^A-Za-z0-9-]", "_", name)


def _type_name(member: object) -> str:
    name = getattr(member, "__name__", None) or getattr(typing.get_origin(member), "__name__", None)
    return name if isinstance(name, str) else type(member).__name__


def _is_output_function(member: object) -> bool:
    return isinstance(member, Tool) or inspect.isfunction(member) or inspect.ismethod(member)


def _typed_member(member: object) -> _Member:
    """The output tool of a type: its schema as parameters, pydantic as the check."""
    name = _type_name(member)
    try:
        adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(typing.cast("Any", member))
        schema = tool_schema(adapter)
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError) as error:
        raise RegistrationError(f"invalid `output_type` member `{name}`: {error}") from error
    wrapped = not (schema.get("type") == "object" and "properties" in schema)
    # The type's docstring describes the tool, not its arguments.
    description = schema.pop("description", None)
    parameters: dict[str, object] = schema
    if wrapped:
        defs = schema.pop("$defs", None)
        parameters = {
            "type": "object",
            "properties": {"response": schema},
            "required": ["response"],
            "additionalProperties": False,
        }
        if defs is not None:
            parameters["$defs"] = defs
    validate, dump = adapter.validate_python, adapter.dump_python

    # Called in place by the runtime (no tool, no worker thread): the output's JSON.
    def decode(args: dict[str, object]) -> object:
        if wrapped and "response" not in args:
            raise InvalidArguments("missing field `response`")
        try:
            return dump(validate(args["response"] if wrapped else args), mode="json")
        except pydantic.ValidationError as error:
            raise invalid(error, within="response" if wrapped else None) from error

    # Without a docstring the runtime describes the tool as every output tool is described.
    about = description if isinstance(description, str) else None
    return _Member(name, (name, about, parameters, decode), adapter)


def _function_member(member: object) -> _Member:
    """An output function: a tool whose return value is the output, decoded by its return
    annotation when it has one."""
    made = native_tool(typing.cast("Any", member))
    function = member.__wrapped__ if isinstance(member, Tool) else member
    returns = type_hints(typing.cast("Callable[..., object]", function), None).get("return", Any)
    adapter = None if returns is Any else pydantic.TypeAdapter(returns)
    return _Member(made.definition.name, made, adapter)


class OutputSpec:
    """What ``create_agent(output_type=...)`` (or one run's ``output_type``) asks for, as
    the native agent takes it."""

    def __init__(self, output_type: object, validators: list[OutputValidator]) -> None:
        self.mode: Literal["tool", "native", "prompted"] = "tool"
        if isinstance(output_type, (NativeOutput, PromptedOutput)):
            self.mode = "native" if isinstance(output_type, NativeOutput) else "prompted"
            output_type = typing.cast("NativeOutput[Any]", output_type).output_type
        members = _union_members(output_type)
        self.text = str in members
        self.members = [
            _function_member(m) if _is_output_function(m) else _typed_member(m) for m in members if m is not str
        ]
        self.validators = validators
        # The runtime names the tools as this does: the member's own name in a union.
        single = len(self.members) == 1
        self.by_tool: Mapping[str, _Member] = {
            ("final_result" if single else f"final_result_{_tool_name_part(m.name)}"): m for m in self.members
        }

    def native(
        self, retries: int | None = None, end_strategy: Literal["early", "exhaustive"] = "early"
    ) -> NativeOutputSpec:
        """The output as the native agent (or a native run) takes it."""
        return NativeOutputSpec(
            [m.native for m in self.members],
            text=self.text,
            mode=self.mode,
            retries=retries,
            end_strategy=end_strategy,
            check=self.check,
            validators=self.validators,
            decoder=self.decode,
        )

    def _member(self, tool_name: str | None) -> _Member | None:
        """The member an output's JSON is a value of: its output tool's (a union member's,
        for a native or prompted union's answer), or for an answer in text, the one member
        of a native or prompted output (none: the answer is text)."""
        if tool_name:
            return self.by_tool.get(tool_name)
        return self.members[0] if self.mode != "tool" and self.members else None

    def decode(self, tool_name: str | None, value: object) -> object:
        """A run's output JSON as the Python value of its type."""
        member = self._member(tool_name)
        return value if member is None else member.decode(value)

    def check(self, ctx: ToolContext, value: object) -> object:
        """Runs the validators on an output's value (JSON, or the answer's text): its JSON
        back (or an awaitable of it, once one is async). The runtime calls it only while
        there are validators."""
        member = self._member(ctx.tool_name)
        output = value if member is None else member.decode(value)
        for index, validator in enumerate(self.validators):
            returned = validator(ctx, output)
            if inspect.isawaitable(returned):
                return self._finish(ctx, member, returned, index + 1)
            output = returned
        return output if member is None else member.encode(output)

    async def _finish(self, ctx: ToolContext, member: _Member | None, pending: Awaitable[Any], start: int) -> object:
        output = await pending
        for validator in self.validators[start:]:
            returned = validator(ctx, output)
            output = await returned if inspect.isawaitable(returned) else returned
        return output if member is None else member.encode(output)
