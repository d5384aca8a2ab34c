"""DESIGN.md §19, return schemas: a tool's return annotation gives
``ToolDefinition.return_schema`` through the parameters' schema path; annotations that say
nothing about a structured value give none; models never see it."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest
from conftest import loose
from pydantic import BaseModel, Field
from snapshot import assert_snapshot

from starweaver import RegistrationError, Tool, ToolDefinition, ToolResult, tool
from starweaver.content import Image, Text
from starweaver.providers import PROVIDERS, render


class Forecast(BaseModel):
    """The weather in one city."""

    city: str = Field(description="The city.")
    celsius: float = Field(description="Degrees Celsius.")


class Node(BaseModel):
    name: str
    children: list[Node] = []


@tool
async def forecast(city: str) -> Forecast:
    """Forecast the weather."""
    return Forecast(city=city, celsius=21.5)


@tool
def status(service: str) -> str:
    """A service's status."""
    return "up" if service == "web" else service


@tool
def forecasts(cities: list[str]) -> list[Forecast]:
    """Forecast several cities."""
    return [Forecast(city=city, celsius=20.0) for city in cities]


@tool
def tree() -> Node:
    """A recursive value."""
    return Node(name="root")


def test_return_annotations_give_return_schemas_snapshotted_with_the_parameters() -> None:
    snapshotted: dict[str, Tool[..., object]] = {"forecast": forecast, "forecasts": forecasts}
    for label, item in snapshotted.items():
        assert_snapshot(f"python__returns_{label}", item.definition.to_json())
    # The same as Rust's `String` (rust__status has an explicit, narrower one).
    assert status.definition.return_schema == {"type": "string"}
    defs_root = forecasts.definition.return_schema
    assert defs_root is not None and defs_root["items"] == {"$ref": "#/$defs/Forecast"} and "$defs" in defs_root


def test_a_recursive_models_schema_is_the_object_at_the_root_as_for_parameters() -> None:
    schema = tree.definition.return_schema
    assert schema is not None and schema["type"] == "object" and loose(schema["$defs"])["Node"]["type"] == "object"


def none_annotation() -> None: ...
def no_return() -> NoReturn: ...  # type: ignore[empty-body]
def any_value() -> Any: ...  # noqa: ANN401 (the case under test)
def an_object() -> object: ...
def a_result() -> ToolResult: ...  # type: ignore[empty-body]
def an_image() -> Image: ...  # type: ignore[empty-body]
def parts() -> list[Text | Image]: ...  # type: ignore[empty-body]
def maybe_result() -> ToolResult | None: ...
def unannotated(): ...  # type: ignore[no-untyped-def]


@pytest.mark.parametrize(
    "fn", [none_annotation, no_return, any_value, an_object, a_result, an_image, parts, maybe_result, unannotated]
)
def test_annotations_that_say_nothing_about_a_structured_value_give_none(fn: Any) -> None:  # noqa: ANN401
    assert tool(fn).definition.return_schema is None


def test_return_schema_false_opts_out_and_a_dict_stands_in_for_the_annotation() -> None:
    @tool(return_schema=False)
    def count(items: list[str]) -> int:
        return len(items)

    @tool(return_schema={"type": "string", "enum": ["up", "down"]})
    def health() -> str:
        return "up"

    assert count.definition.return_schema is None
    assert health.definition.return_schema == {"type": "string", "enum": ["up", "down"]}
    assert "return_schema" not in count.definition.to_dict(), "absent, as in the canonical JSON"
    assert health.definition.to_dict()["return_schema"] == {"type": "string", "enum": ["up", "down"]}


def test_a_malformed_return_schema_is_a_registration_error_naming_the_path() -> None:
    with pytest.raises(RegistrationError, match=r"invalid tool `bad`: return schema at `/items`: must be a schema"):
        tool(name="bad", return_schema={"type": "array", "items": 3})(status.__wrapped__)
    with pytest.raises(RegistrationError, match="`return_schema` must be a dict"):
        tool(return_schema="integer")(status.__wrapped__)  # type: ignore[call-overload]
    with pytest.raises(RegistrationError, match=r"return schema at `/`: must be a JSON object schema, got a bool"):
        ToolDefinition("t", {"type": "object"}, return_schema=True)  # type: ignore[arg-type]


def test_the_definition_class_takes_and_gives_the_return_schema() -> None:
    definition = ToolDefinition("t", {"type": "object", "properties": {}}, return_schema={"type": "integer"})
    assert definition.return_schema == {"type": "integer"}
    assert ToolDefinition("t", {"type": "object"}).return_schema is None


@pytest.mark.parametrize("provider", PROVIDERS)
def test_models_never_see_the_return_schema(provider: Any) -> None:  # noqa: ANN401
    parameters = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    typed = ToolDefinition("forecast", parameters, description="Forecast.", return_schema={"type": "integer"})
    plain = ToolDefinition("forecast", parameters, description="Forecast.")
    assert render(typed, provider) == render(plain, provider)


def test_any_inside_a_container_still_says_what_the_container_is() -> None:
    @tool
    def rows() -> list[dict[str, Any]]:
        return []

    schema = rows.definition.return_schema
    assert schema is not None and schema["type"] == "array" and loose(schema["items"])["type"] == "object", schema
