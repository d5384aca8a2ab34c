"""Signatures into JSON Schemas and argument validators. The only module that uses pydantic.

A tool's parameters become one of three shapes:

* typed keyword parameters: a pydantic model built from the signature (``extra="forbid"``,
  so an unexpected argument is an error);
* a single Pydantic model parameter: that model's schema and validation;
* an explicit ``parameters_schema``: the schema as given, arguments validated against the
  signature's annotations.

Arguments arrive as JSON bytes and are validated with ``validate_json``, so they are parsed
once, in pydantic-core.
"""

from __future__ import annotations

import functools
import inspect
import json
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, Union

import docstring_parser
import pydantic
import typing_extensions
from docstring_parser import google, numpydoc, rest
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import SchemaValidator, core_schema

from ._native import ToolContext, ToolResult
from .content import Part
from .exceptions import InvalidArguments, RegistrationError

__all__ = ["CallSpec", "inspect_callable"]

Decode = Callable[[bytes], "tuple[tuple[object, ...], dict[str, object]]"]


@dataclass(frozen=True, slots=True)
class CallSpec:
    """What the runtime needs to call one tool."""

    parameters: dict[str, object]
    description: str | None
    takes_context: bool
    decode: Decode
    returns: dict[str, object] | None = None
    """The JSON Schema of the returned value, from the return annotation."""


class _ToolSchema(GenerateJsonSchema):
    """pydantic's JSON Schema without generated titles: field names already say it."""

    def field_title_should_be_set(self, schema: Any) -> bool:  # noqa: ANN401 (pydantic's signature)
        return False


def _schema_of(model: type[pydantic.BaseModel]) -> dict[str, object]:
    return _rooted(model.model_json_schema(schema_generator=_ToolSchema))


def _rooted(schema: dict[str, Any]) -> dict[str, object]:
    reference = schema.get("$ref")
    defs: dict[str, Any] = schema.get("$defs", {})
    if isinstance(reference, str) and reference.removeprefix("#/$defs/") in defs:
        # A recursive model is a bare `$ref` at the root; tool parameters need the object
        # itself there. `$defs` stays, for the references inside it.
        schema = {**defs[reference.removeprefix("#/$defs/")], "$defs": defs}
    schema.pop("title", None)
    return schema


def tool_schema(adapter: pydantic.TypeAdapter[Any]) -> dict[str, Any]:
    """A type's JSON Schema as tools have theirs: no generated titles, an object at the root."""
    return _rooted(adapter.json_schema(schema_generator=_ToolSchema))


def invalid(error: pydantic.ValidationError, within: str | None = None) -> InvalidArguments:
    """The arguments' validation failure, naming each bad field (under ``within``, when the
    value checked is that argument)."""
    parts: list[str] = []
    for item in error.errors(include_url=False):
        location = ".".join(str(part) for part in ((within,) if within else ()) + tuple(item["loc"]))
        parts.append(f"`{location}`: {item['msg']}" if location else str(item["msg"]))
    return InvalidArguments("; ".join(parts))


def _is_context(annotation: object) -> bool:
    # `ToolContext[MyDeps]` is a generic alias, whose origin is the class.
    annotation = typing.get_origin(annotation) or annotation
    return isinstance(annotation, type) and issubclass(annotation, ToolContext)


def _model_class(annotation: object) -> type[pydantic.BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return annotation
    return None


def inspect_callable(
    fn: Callable[..., object],
    *,
    name: str,
    parameters_schema: Mapping[str, object] | None,
    localns: Mapping[str, object] | None,
    derive_return: bool = True,
    kind: str = "tool",
) -> CallSpec:
    """Reads ``fn``'s signature, docstring and annotations into a :class:`CallSpec`; its
    ``returns`` from the return annotation when ``derive_return``.

    Raises ``RegistrationError`` naming the parameter for signatures a tool cannot have;
    the message names ``fn`` as a ``kind`` (a tool, or what else is read this way: an MCP
    prompt, a resource template).
    """
    try:
        signature = inspect.signature(fn)
        hints = type_hints(fn, localns)
    except (NameError, TypeError) as error:
        raise RegistrationError(f"invalid {kind} `{name}`: cannot resolve its annotations: {error}") from error
    # The callable's own docstring: `inspect.getdoc` would inherit a base class's. The
    # parsers clean its indentation themselves.
    docstring = _parse_docstring(getattr(fn, "__doc__", None) or "")
    param_docs = {p.arg_name: p.description for p in docstring.params if p.description}

    params = list(signature.parameters.values())
    takes_context = bool(params) and _is_context(hints.get(params[0].name))
    business = params[1:] if takes_context else params
    for param in business:
        if _is_context(hints.get(param.name)):
            raise RegistrationError(
                f"invalid {kind} `{name}`: `ToolContext` must be the first parameter, but `{param.name}` is one"
            )
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise RegistrationError(
                f"invalid {kind} `{name}`: parameter `{param.name}` must be an ordinary keyword parameter "
                "(no `*args`, `**kwargs` or positional-only parameters)"
            )

    description = (
        "\n\n".join(part for part in (docstring.short_description, docstring.long_description) if part) or None
    )
    try:
        spec = _call_spec(name, business, hints, param_docs, description, takes_context, parameters_schema, kind)
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError) as error:
        raise RegistrationError(f"invalid {kind} `{name}`: {_schema_failure(business, hints, error)}") from error
    if derive_return and "return" in hints:
        return replace(spec, returns=return_schema(hints["return"]))
    return spec


def return_schema(annotation: Any) -> dict[str, object] | None:  # noqa: ANN401 (any annotation)
    """The JSON Schema of what a tool returning ``annotation`` gives back, made as the
    parameters' are (pydantic's, no titles, a recursive model's root resolved), for the
    serialised value. ``None`` when the annotation says nothing about a structured value:
    ``None``, ``NoReturn``, ``Any``, ``object``, a ``ToolResult`` or content parts (what the
    model sees, not a value), or a type pydantic has no JSON Schema for."""
    if _holds_unstructured(annotation):
        return None
    fast = _fast_type(annotation)
    if fast is not None:
        schema: dict[str, object] = dict(fast[0])
    else:
        try:
            adapter: pydantic.TypeAdapter[object] = pydantic.TypeAdapter(annotation)
            schema = _rooted(adapter.json_schema(schema_generator=_ToolSchema, mode="serialization"))
        except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError):
            return None
    # As in Rust: a schema that allows anything, or only `null`, is no return schema.
    return None if schema in ({}, {"type": "null"}) else schema


# What the model sees instead of a value: a `ToolResult` or a content part.
_UNSTRUCTURED: tuple[type, ...] = (ToolResult, *typing.get_args(Part))

# Return annotations that allow any value, or none.
_SAYS_NOTHING = (None, type(None), Any, object, typing.NoReturn, typing_extensions.Never)


def _holds_unstructured(annotation: object) -> bool:
    """Whether a return annotation says nothing about a value (at the top: ``list[Any]``
    still says "a list"), or holds what the model sees instead of one, anywhere."""
    return any(annotation is nothing for nothing in _SAYS_NOTHING) or _holds_parts(annotation)


def _holds_parts(annotation: object) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, _UNSTRUCTURED):
        return True
    return any(_holds_parts(arg) for arg in typing.get_args(annotation))


def _call_spec(
    name: str,
    business: list[inspect.Parameter],
    hints: Mapping[str, Any],
    param_docs: Mapping[str, str],
    description: str | None,
    takes_context: bool,
    parameters_schema: Mapping[str, object] | None,
    kind: str,
) -> CallSpec:
    whole = _whole_object_parameter(business, hints, parameters_schema)
    if whole is not None:
        annotation = hints.get(whole.name, dict[str, object])
        model = _model_class(annotation)
        if model is not None:
            validate = model.__pydantic_validator__.validate_json
            schema = _schema_of(model) if parameters_schema is None else dict(parameters_schema)
            return CallSpec(schema, description, takes_context, _decode_whole(validate))
        adapter: pydantic.TypeAdapter[object] = pydantic.TypeAdapter(annotation)
        if parameters_schema is None:
            schema = adapter.json_schema(schema_generator=_ToolSchema)
            schema.pop("title", None)
        else:
            schema = dict(parameters_schema)
        return CallSpec(schema, description, takes_context, _decode_whole(adapter.validate_json))
    fast = _fast_fields(business, hints, param_docs)
    if fast is not None:
        fast_schema, fields = fast
        schema = dict(parameters_schema) if parameters_schema is not None else fast_schema
        return CallSpec(schema, description, takes_context, _decode_typed_dict(fields))
    model = _signature_model(name, business, hints, param_docs, kind)
    schema = dict(parameters_schema) if parameters_schema is not None else _schema_of(model)
    return CallSpec(schema, description, takes_context, _decode_fields(model))


@functools.lru_cache(maxsize=4096)
def _compiled(annotation: str) -> types.CodeType:
    return compile(annotation, "<annotation>", "eval")


def type_hints(fn: Callable[..., object], localns: Mapping[str, object] | None) -> dict[str, Any]:
    """``typing.get_type_hints(fn, include_extras=True)``, faster for the common case.

    Under ``from __future__ import annotations`` every annotation is a string, and
    ``get_type_hints`` compiles each one anew: most of the cost of ``@tool``. For a plain
    function whose strings evaluate to annotations with no string left inside, the strings'
    compiled code is cached and evaluated as ``get_type_hints`` would (in the function's
    globals and ``localns``). Anything else (nested forward references, callable objects,
    a failing name) takes ``get_type_hints`` itself, which also gives the right error."""
    annotations = fn.__annotations__ if isinstance(fn, types.FunctionType) else None
    if annotations and not hasattr(fn, "__wrapped__"):
        try:
            hints = {
                name: eval(_compiled(value), fn.__globals__, localns) if isinstance(value, str) else value  # noqa: S307
                for name, value in annotations.items()
            }
        except Exception:  # noqa: BLE001 (the exact path below raises what it should)
            hints = None
        if hints is not None and all(_settled(hint) for hint in hints.values()):
            return hints
    return typing.get_type_hints(fn, localns=dict(localns) if localns else None, include_extras=True)


def _settled(annotation: object) -> bool:
    """Whether an evaluated annotation holds no forward reference for ``get_type_hints``
    to resolve (``Literal`` strings and ``Annotated`` metadata are values, not references)."""
    if type(annotation) is type:  # a plain class: the common case, and no generic alias
        return True
    if isinstance(annotation, (str, typing.ForwardRef)):
        return False
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        return True
    if origin is typing.Annotated:
        args = args[:1]
    return all(_settled(arg) for arg in args)


def _whole_object_parameter(
    params: list[inspect.Parameter], hints: Mapping[str, object], parameters_schema: Mapping[str, object] | None
) -> inspect.Parameter | None:
    """The one parameter that receives the whole arguments object, if there is one: a
    Pydantic model; a mapping (``args: dict[str, object]``, a ``TypedDict``) or an
    unannotated parameter, when it is named ``args`` (as in Rust's ``#[tool]``) or an
    explicit schema describes the object. Any other single parameter is an ordinary
    keyword argument, so ``one(n: int)`` with an explicit schema receives ``n``."""
    if len(params) != 1:
        return None
    param = params[0]
    annotation = hints.get(param.name)
    if _model_class(annotation) is not None:
        return param
    if annotation is not None and not _is_mapping(annotation):
        return None
    if parameters_schema is None:
        return param if param.name == "args" else None
    properties = parameters_schema.get("properties")
    named_property = isinstance(properties, Mapping) and param.name in properties
    return param if annotation is not None or not named_property else None


def _is_mapping(annotation: object) -> bool:
    origin = typing.get_origin(annotation) or annotation
    if typing_extensions.is_typeddict(annotation):
        return True
    return isinstance(origin, type) and issubclass(origin, Mapping)


def _schema_failure(params: list[inspect.Parameter], hints: Mapping[str, Any], error: Exception) -> str:
    """Names the parameter whose annotation pydantic cannot turn into a JSON Schema."""
    for param in params:
        annotation = hints.get(param.name, Any)
        try:
            pydantic.TypeAdapter(annotation).json_schema()
        except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError):
            return f"parameter `{param.name}`: its annotation {annotation!r} has no JSON Schema ({error})"
    return f"its parameters have no JSON Schema ({error})"


# Parsers are built once: building one per docstring costs more than parsing.
_GOOGLE = google.GoogleParser()
_NUMPY = numpydoc.NumpydocParser()


def _parse_docstring(text: str) -> docstring_parser.Docstring:
    """Parses with the one style the text uses (Google, NumPy or Sphinx); trying every
    style, as `docstring_parser.parse` does, triples the cost of every `@tool`."""
    if "Args:" in text or "Arguments:" in text:
        return _GOOGLE.parse(text)
    if "----" in text:
        return _NUMPY.parse(text)
    if ":param" in text:
        return rest.parse(text)
    return _GOOGLE.parse(text)


_PRIMITIVES: dict[object, tuple[str, Callable[[], core_schema.CoreSchema]]] = {
    str: ("string", core_schema.str_schema),
    int: ("integer", core_schema.int_schema),
    float: ("number", core_schema.float_schema),
    bool: ("boolean", core_schema.bool_schema),
}

# A JSON Schema now, and the matching pydantic-core schema when first needed.
_Fast = tuple[dict[str, object], Callable[[], core_schema.CoreSchema]]


def _fast_type(annotation: object) -> _Fast | None:
    """The JSON Schema pydantic would generate for a plain annotation, and a matching
    pydantic-core schema; ``None`` for anything else (which takes the pydantic path)."""
    if annotation is Any or annotation is object:
        return {}, core_schema.any_schema
    if annotation in _PRIMITIVES:
        json_type, core = _PRIMITIVES[annotation]
        return {"type": json_type}, core
    if annotation is None or annotation is type(None):
        return {"type": "null"}, core_schema.none_schema
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (Union, types.UnionType):
        present = [arg for arg in args if arg is not type(None)]
        inner = _fast_type(present[0]) if len(present) == 1 and len(args) == 2 else None
        if inner is None:
            return None
        inner_core = inner[1]
        return {"anyOf": [inner[0], {"type": "null"}]}, lambda: core_schema.nullable_schema(inner_core())
    if origin is list and len(args) == 1:
        item = _fast_type(args[0])
        if item is None:
            return None
        item_core = item[1]
        return {"items": item[0], "type": "array"}, lambda: core_schema.list_schema(item_core())
    if origin is dict and len(args) == 2 and args[0] is str:
        value = _fast_type(args[1])
        if value is None:
            return None
        value_core = value[1]
        return {"additionalProperties": value[0], "type": "object"}, lambda: core_schema.dict_schema(
            core_schema.str_schema(), value_core()
        )
    if origin is Literal and args and all(type(arg) is str for arg in args):
        values = list(args)
        json_schema: dict[str, object] = {"const": values[0]} if len(values) == 1 else {"enum": values}
        return {**json_schema, "type": "string"}, lambda: core_schema.literal_schema(values)
    return None


# Per parameter: the core schema thunk and the default (`inspect.Parameter.empty` if none).
_FastFields = dict[str, tuple[Callable[[], core_schema.CoreSchema], object]]


def _fast_fields(
    params: list[inspect.Parameter], hints: Mapping[str, object], docs: Mapping[str, str]
) -> tuple[dict[str, object], _FastFields] | None:
    """Schema and validator fields for a signature of plain annotations, without building
    a pydantic model (the `@tool` hot path); ``None`` when any parameter needs pydantic."""
    properties: dict[str, object] = {}
    fields: _FastFields = {}
    required: list[str] = []
    for param in params:
        fast = _fast_type(hints.get(param.name, Any))
        if fast is None:
            return None
        json_schema, core = fast
        field_schema = dict(json_schema)
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        else:
            if not _is_json(param.default):
                return None
            field_schema["default"] = param.default
        fields[param.name] = (core, param.default)
        if param.name in docs:
            field_schema["description"] = docs[param.name]
        properties[param.name] = dict(sorted(field_schema.items()))
    schema: dict[str, object] = {"additionalProperties": False, "properties": properties}
    if required:
        schema["required"] = required
    schema["type"] = "object"
    return schema, fields


def _is_json(value: object) -> bool:
    """Whether a default can stand in the schema as it is."""
    if value is None or type(value) in (bool, int, str):
        return True
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _typed_dict_validator(fields: _FastFields) -> SchemaValidator:
    typed_fields: dict[str, core_schema.TypedDictField] = {}
    for name, (core, default) in fields.items():
        if default is inspect.Parameter.empty:
            typed_fields[name] = core_schema.typed_dict_field(core(), required=True)
        else:
            typed_fields[name] = core_schema.typed_dict_field(
                core_schema.with_default_schema(core(), default=default), required=False
            )
    return SchemaValidator(core_schema.typed_dict_schema(typed_fields, extra_behavior="forbid"))


def _signature_model(
    name: str,
    params: list[inspect.Parameter],
    hints: Mapping[str, object],
    docs: Mapping[str, str],
    kind: str,
) -> type[pydantic.BaseModel]:
    fields: dict[str, Any] = {}
    for param in params:
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        description = docs.get(param.name)
        fields[param.name] = (annotation, pydantic.Field(default, description=description) if description else default)
    try:
        return pydantic.create_model(
            f"{name}_arguments", __config__=pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=False), **fields
        )
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError) as error:
        raise RegistrationError(f"invalid {kind} `{name}`: {error}") from error


def _decode_whole(validate: Callable[[bytes], object]) -> Decode:
    """The arguments object is the tool's one parameter (a model, or a dict)."""

    def decode(raw: bytes) -> tuple[tuple[object, ...], dict[str, object]]:
        try:
            return (validate(raw),), {}
        except pydantic.ValidationError as error:
            raise invalid(error) from error

    return decode


def _decode_typed_dict(fields: _FastFields) -> Decode:
    """Validates into a dict of keyword arguments. The validator is compiled on the first
    call, so defining a tool costs no pydantic-core compilation."""
    validators: list[SchemaValidator] = []

    def decode(raw: bytes) -> tuple[tuple[object, ...], dict[str, object]]:
        if not validators:
            validators.append(_typed_dict_validator(fields))
        try:
            kwargs: dict[str, object] = validators[0].validate_json(raw)
        except pydantic.ValidationError as error:
            raise invalid(error) from error
        return (), kwargs

    return decode


def _decode_fields(model: type[pydantic.BaseModel]) -> Decode:
    validate = model.__pydantic_validator__.validate_json
    names = tuple(model.model_fields)

    def decode(raw: bytes) -> tuple[tuple[object, ...], dict[str, object]]:
        try:
            validated = validate(raw)
        except pydantic.ValidationError as error:
            raise invalid(error) from error
        values = validated.__dict__
        return (), {field: values[field] for field in names}

    return decode
