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

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import docstring_parser
import pydantic
from pydantic.json_schema import GenerateJsonSchema

from ._native import ToolContext
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


class _ToolSchema(GenerateJsonSchema):
    """pydantic's JSON Schema without generated titles: field names already say it."""

    def field_title_should_be_set(self, schema: Any) -> bool:  # noqa: ANN401 (pydantic's signature)
        return False


def _schema_of(model: type[pydantic.BaseModel]) -> dict[str, object]:
    schema = model.model_json_schema(schema_generator=_ToolSchema)
    schema.pop("title", None)
    return schema


def _invalid(error: pydantic.ValidationError) -> InvalidArguments:
    parts: list[str] = []
    for item in error.errors(include_url=False):
        location = ".".join(str(part) for part in item["loc"])
        parts.append(f"`{location}`: {item['msg']}" if location else str(item["msg"]))
    return InvalidArguments("; ".join(parts))


def _is_context(annotation: object) -> bool:
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
) -> CallSpec:
    """Reads ``fn``'s signature, docstring and annotations into a :class:`CallSpec`.

    Raises ``RegistrationError`` naming the parameter for signatures a tool cannot have.
    """
    try:
        signature = inspect.signature(fn)
        hints = typing.get_type_hints(fn, localns=dict(localns) if localns else None, include_extras=True)
    except (NameError, TypeError) as error:
        raise RegistrationError(f"invalid tool `{name}`: cannot resolve its annotations: {error}") from error
    # The callable's own docstring: `inspect.getdoc` would inherit a base class's.
    own_doc = getattr(fn, "__doc__", None)
    docstring = docstring_parser.parse(inspect.cleandoc(own_doc) if own_doc else "")
    param_docs = {p.arg_name: p.description for p in docstring.params if p.description}

    params = list(signature.parameters.values())
    takes_context = bool(params) and _is_context(hints.get(params[0].name))
    business = params[1:] if takes_context else params
    for param in business:
        if _is_context(hints.get(param.name)):
            raise RegistrationError(
                f"invalid tool `{name}`: `ToolContext` must be the first parameter, but `{param.name}` is one"
            )
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise RegistrationError(
                f"invalid tool `{name}`: parameter `{param.name}` must be an ordinary keyword parameter "
                "(no `*args`, `**kwargs` or positional-only parameters)"
            )

    description = "\n\n".join(part for part in (docstring.short_description, docstring.long_description) if part) or None
    only = business[0] if len(business) == 1 else None
    only_model = _model_class(hints.get(only.name)) if only is not None else None

    if only is not None and only_model is not None and parameters_schema is None:
        validate_model = only_model.__pydantic_validator__.validate_json
        return CallSpec(_schema_of(only_model), description, takes_context, _decode_whole(validate_model))
    if only is not None and parameters_schema is not None:
        adapter: pydantic.TypeAdapter[object] = pydantic.TypeAdapter(hints.get(only.name, dict[str, object]))
        return CallSpec(dict(parameters_schema), description, takes_context, _decode_whole(adapter.validate_json))
    model = _signature_model(name, business, hints, param_docs)
    schema = dict(parameters_schema) if parameters_schema is not None else _schema_of(model)
    return CallSpec(schema, description, takes_context, _decode_fields(model))


def _signature_model(
    name: str,
    params: list[inspect.Parameter],
    hints: Mapping[str, object],
    docs: Mapping[str, str],
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
        raise RegistrationError(f"invalid tool `{name}`: {error}") from error


def _decode_whole(validate: Callable[[bytes], object]) -> Decode:
    """The arguments object is the tool's one parameter (a model, or a dict)."""

    def decode(raw: bytes) -> tuple[tuple[object, ...], dict[str, object]]:
        try:
            return (validate(raw),), {}
        except pydantic.ValidationError as error:
            raise _invalid(error) from error

    return decode


def _decode_fields(model: type[pydantic.BaseModel]) -> Decode:
    validate = model.__pydantic_validator__.validate_json
    names = tuple(model.model_fields)

    def decode(raw: bytes) -> tuple[tuple[object, ...], dict[str, object]]:
        try:
            validated = validate(raw)
        except pydantic.ValidationError as error:
            raise _invalid(error) from error
        values = validated.__dict__
        return (), {field: values[field] for field in names}

    return decode
