"""The `@tool` fast path (plain annotations, no pydantic model) must produce exactly the
schema and the validation errors the pydantic-model path produces."""

from __future__ import annotations

import inspect
import typing
from typing import Any, Literal, Optional

import pytest

from starweaver import InvalidArguments, _schema


def both_paths(fn: typing.Callable[..., object]) -> tuple[_schema.CallSpec, dict[str, object], _schema.Decode]:
    params = list(inspect.signature(fn).parameters.values())
    hints = typing.get_type_hints(fn)
    fast = _schema.inspect_callable(fn, name="t", parameters_schema=None, localns=None)
    model = _schema._signature_model("t", params, hints, {}, "tool")
    return fast, _schema._schema_of(model), _schema._decode_fields(model)


def plain(
    s: str,
    i: int,
    f: float,
    b: bool,
    anything: Any,
    maybe: str | None = None,
    legacy: Optional[int] = 3,  # noqa: UP045 (the legacy spelling is the case under test)
    xs: list[int] = [],  # noqa: B006 (a default value, never mutated)
    tags: dict[str, str] = {},  # noqa: B006
    one: Literal["only"] = "only",
    kind: Literal["bug", "feature"] = "bug",
    flag: bool = False,
) -> None: ...


def test_schemas_match_pydantic() -> None:
    fast, pydantic_schema, _ = both_paths(plain)
    assert fast.parameters == pydantic_schema
    fast_properties, pydantic_properties = fast.parameters["properties"], pydantic_schema["properties"]
    assert isinstance(fast_properties, dict) and isinstance(pydantic_properties, dict)
    assert list(fast_properties) == list(pydantic_properties)


@pytest.mark.parametrize(
    "arguments",
    [
        b'{"s": "x", "i": 1, "f": 1.5, "b": true, "anything": null}',
        b'{"s": "x", "i": "1", "f": 2, "b": "yes", "anything": [1], "xs": ["2"], "kind": "feature", "maybe": null}',
        b'{"s": 1, "f": "x", "b": true, "anything": 1, "extra": 1}',
        b'{"s": "x", "i": 1.5, "f": 1, "b": true, "anything": 1, "kind": "other", "one": "two", "tags": {"a": 1}}',
        b"[]",
        b"{not json",
    ],
)
def test_validation_matches_pydantic(arguments: bytes) -> None:
    fast, _, model_decode = both_paths(plain)

    def outcome(decode: _schema.Decode) -> object:
        try:
            return decode(arguments)[1]
        except InvalidArguments as error:
            return f"InvalidArguments: {error.message}"

    assert outcome(fast.decode) == outcome(model_decode)
