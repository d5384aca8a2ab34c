"""Tricky Python signatures for the provider snapshots and the checker
(``test_providers.py``): optionals, literals, documented enums, nested, recursive and listed
models, dicts, unions, defaults, date-times, UUIDs, constrained numbers and strings."""

from __future__ import annotations

import datetime as dt
import enum
import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from starweaver import BaseTool, Tool, ToolContext, tool


class Address(BaseModel):
    """A postal address."""

    street: str = Field(description="Street and number.")
    country: str = Field(description="ISO 3166 country code.")


class Severity(enum.Enum):
    """How bad an incident is: LOW, nobody is affected yet; HIGH, some users are; CRITICAL,
    everyone is (page the on-call engineer)."""

    LOW = "low"
    HIGH = "high"
    CRITICAL = "critical"


class Order(BaseModel):
    """An order with a shipping and an optional billing address."""

    id: int
    shipping: Address
    billing: Address | None = None


class TreeNode(BaseModel):
    """A tree of named nodes."""

    name: str
    children: list[TreeNode] = []


class LineItem(BaseModel):
    sku: str
    quantity: Annotated[int, Field(ge=1)]


class Circle(BaseModel):
    kind: Literal["circle"] = "circle"
    radius: float


class Square(BaseModel):
    kind: Literal["square"] = "square"
    side: float


class Contact(BaseModel):
    email: str
    phone: str | None = None


class Level4(BaseModel):
    leaf: str


class Level3(BaseModel):
    four: list[Level4]


class Level2(BaseModel):
    three: Level3 | None = None


class Level1(BaseModel):
    two: Level2


class Flags(BaseModel):
    """Flags that all default."""

    verbose: bool = False
    retries: int = 3


@tool
async def optional_params(query: str, limit: int | None = None) -> object:
    """Search, with an optional limit.

    Args:
        query: What to look for.
        limit: At most this many results.
    """
    return {"query": query, "limit": limit}


@tool
async def defaults(city: str, days: int = 3, metric: bool = False) -> object:
    """Forecast with defaults.

    Args:
        city: The city.
        days: Days ahead.
        metric: Metric units.
    """
    return {"city": city, "days": days, "metric": metric}


@tool
async def literal_unit(value: float, unit: Literal["celsius", "fahrenheit"]) -> object:
    """Convert a temperature.

    :param value: The value.
    :param unit: The unit to convert to.
    """
    return {"value": value, "unit": unit}


@tool
async def documented_enum(title: str, severity: Severity) -> object:
    """Open an incident.

    Parameters
    ----------
    title : str
        What happened.
    severity : Severity
        How bad it is.
    """
    return {"title": title, "severity": severity.value}


@tool
async def nested_model(order: Order) -> object:
    """Place an order."""
    return order.model_dump()


@tool
async def recursive_tree(tree: TreeNode) -> object:
    """Store a tree."""
    return tree.model_dump()


@tool
async def list_of_models(items: list[LineItem]) -> object:
    """Invoice some items."""
    return [item.model_dump() for item in items]


@tool
async def dict_of_counts(counts: dict[str, int]) -> object:
    """Record counts per name."""
    return counts


@tool
async def dict_of_models(by_region: dict[str, Address]) -> object:
    """Addresses per region."""
    return {k: v.model_dump() for k, v in by_region.items()}


@tool
async def plain_union(value: int | str) -> object:
    """Echo a number or a text."""
    return value


@tool
async def discriminated_union(shape: Annotated[Circle | Square, Field(discriminator="kind")]) -> object:
    """Area of a shape."""
    return shape.model_dump()


@tool
async def datetimes(at: dt.datetime, on: dt.date, lasting: dt.timedelta | None = None) -> object:
    """Schedule something."""
    return {"at": at.isoformat(), "on": on.isoformat(), "lasting": str(lasting)}


@tool
async def uuids(id: uuid.UUID, parent: uuid.UUID | None = None) -> object:  # noqa: A002 - the model's word
    """Link two records."""
    return {"id": str(id), "parent": str(parent) if parent else None}


@tool
async def constrained_numbers(
    count: Annotated[int, Field(ge=1, le=100, description="How many, from 1 to 100.")],
    ratio: Annotated[float, Field(gt=0, lt=1, multiple_of=0.05)],
) -> object:
    """Sample with bounds."""
    return {"count": count, "ratio": ratio}


@tool
async def constrained_strings(
    name: Annotated[str, Field(min_length=1, max_length=40)],
    slug: Annotated[str, Field(pattern=r"^[a-z]+$")],
) -> object:
    """Name something."""
    return {"name": name, "slug": slug}


@tool
async def optional_list(tags: list[str] | None = None) -> object:
    """Tag something."""
    return tags


@tool
async def tuple_param(point: tuple[float, float]) -> object:
    """Go to a point."""
    return list(point)


@tool
async def optional_nested_model(contact: Contact | None = None) -> object:
    """Notify someone."""
    return contact.model_dump() if contact else None


@tool
async def set_param(ids: set[str]) -> object:
    """Deduplicate ids."""
    return sorted(ids)


@tool
async def model_argument(args: Flags) -> object:
    """Run with flags."""
    return args.model_dump()


@tool
async def deep_nesting(top: Level1) -> object:
    """Walk four levels down."""
    return top.model_dump()


@tool
async def no_params() -> str:
    """Ping."""
    return "pong"


@tool(strict=True)
async def strict_booking(room: str, nights: int = 1) -> object:
    """Book a room; always strict.

    Args:
        room: The room.
        nights: Nights, one by default.
    """
    return {"room": room, "nights": nights}


@tool(strict=False)
async def lax_lookup(key: str) -> str:
    """Never strict, whatever the schema allows."""
    return key


@tool
async def any_json(payload: Any) -> object:  # noqa: ANN401 - the point of the signature
    """Store any JSON payload."""
    return payload


@tool
async def with_context(ctx: ToolContext, note: str, urgent: bool = False) -> object:
    """Context first, then the model's parameters."""
    return {"note": note, "urgent": urgent, "call": ctx.tool_call_id}


@tool(
    parameters_schema={
        "type": "object",
        "properties": {
            "target": {"$ref": "#/$defs/Target", "description": "Where to send it."},
            "mode": {"oneOf": [{"const": "fast"}, {"const": "safe"}]},
        },
        "required": ["target"],
        "$defs": {
            "Target": {
                "type": "object",
                "properties": {"host": {"type": "string", "format": "hostname"}},
                "required": ["host"],
            }
        },
    }
)
async def explicit_refs(args: dict[str, object]) -> object:
    """An explicit schema with `oneOf` and a described `$ref`."""
    return args


class Deploy(BaseTool):
    """A class-based tool."""

    name = "deploy_service"
    description = "Deploy a service."

    async def call(self, ctx: ToolContext, service: str, version: str = "latest") -> object:
        return {"service": service, "version": version}


CORPUS: list[Tool[..., object] | BaseTool] = [
    optional_params,
    defaults,
    literal_unit,
    documented_enum,
    nested_model,
    recursive_tree,
    list_of_models,
    dict_of_counts,
    dict_of_models,
    plain_union,
    discriminated_union,
    datetimes,
    uuids,
    constrained_numbers,
    constrained_strings,
    optional_list,
    tuple_param,
    optional_nested_model,
    set_param,
    model_argument,
    deep_nesting,
    no_params,
    strict_booking,
    lax_lookup,
    any_json,
    with_context,
    explicit_refs,
    Deploy(),
]
