"""Rich tool results: text, images, audio, documents and MCP resources as content parts.

A tool returns a part, or a list of them, directly or as ``ToolResult(model_content=[...])``;
each provider gets them in the form it accepts, and ``serve-mcp`` sends them as the MCP
content blocks of their kinds. In histories, events and exported state a part is its
canonical dict (``to_dict()``, typed as ``starweaver.types.ContentPart``), binary data in
base64; ``from_dict`` reads one back.

    from starweaver import tool
    from starweaver.content import Image, Text

    @tool
    def chart() -> list[Text | Image]:
        \"\"\"Draw the chart.\"\"\"
        return [Text("the chart"), Image(data=b"\\x89PNG...", media_type="image/png")]
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from .types import (
    AudioContent,
    ContentPart,
    DocumentContent,
    ImageContent,
    ResourceContent,
    ResourceLinkContent,
    TextContent,
)

__all__ = ["Audio", "Document", "Image", "Part", "Resource", "ResourceLink", "Text", "from_dict"]


class _Part:
    """What the runtime recognises as a content part: it crosses as ``to_dict()``."""

    __slots__ = ()

    def to_dict(self) -> ContentPart:
        raise NotImplementedError


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _bytes(value: object, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray):
        return bytes(value)
    raise TypeError(f"{what} must be bytes, not {type(value).__name__}")


@dataclass(frozen=True)
class Text(_Part):
    """Text."""

    text: str

    def to_dict(self) -> TextContent:
        return {"kind": "text", "text": self.text}


@dataclass(frozen=True)
class _Media(_Part):
    """What an image and a document share: their bytes with a media type, or a URL."""

    data: bytes | None = None
    media_type: str | None = None
    url: str | None = None

    def __post_init__(self) -> None:
        what = type(self).__name__
        if self.data is not None:
            object.__setattr__(self, "data", _bytes(self.data, f"{what} data"))
        if self.data is not None and self.url is not None:
            raise ValueError(f"{what}: give `data` or `url`, not both")
        if self.data is None and self.url is None:
            raise ValueError(f"{what}: give `data` (with `media_type`) or `url`")
        if self.data is not None and self.media_type is None:
            raise ValueError(f"{what}: `data` needs its `media_type`")

    def _fill(self, out: ImageContent | DocumentContent) -> None:
        if self.data is not None:
            out["data"] = _b64(self.data)
        if self.url is not None:
            out["url"] = self.url
        if self.media_type is not None:
            out["media_type"] = self.media_type


@dataclass(frozen=True)
class Image(_Media):
    """An image: ``Image(data=b"...", media_type="image/png")`` or ``Image(url=...)``."""

    def to_dict(self) -> ImageContent:
        out: ImageContent = {"kind": "image"}
        self._fill(out)
        return out


@dataclass(frozen=True)
class Audio(_Part):
    """Audio, as bytes: ``Audio(data=b"...", media_type="audio/wav")``."""

    data: bytes
    media_type: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", _bytes(self.data, "Audio data"))

    def to_dict(self) -> AudioContent:
        return {"kind": "audio", "data": _b64(self.data), "media_type": self.media_type}


@dataclass(frozen=True)
class Document(_Media):
    """A PDF or another file: ``Document(data=b"%PDF...", media_type="application/pdf")``
    or ``Document(url=...)``, with an optional ``title`` and ``filename``."""

    title: str | None = None
    filename: str | None = None

    def to_dict(self) -> DocumentContent:
        out: DocumentContent = {"kind": "document"}
        self._fill(out)
        if self.title is not None:
            out["title"] = self.title
        if self.filename is not None:
            out["filename"] = self.filename
        return out


@dataclass(frozen=True)
class ResourceLink(_Part):
    """A reference to a resource the reader may fetch (MCP's ``resource_link``)."""

    uri: str
    name: str
    description: str | None = None
    media_type: str | None = None

    def to_dict(self) -> ResourceLinkContent:
        out: ResourceLinkContent = {"kind": "resource_link", "uri": self.uri, "name": self.name}
        if self.description is not None:
            out["description"] = self.description
        if self.media_type is not None:
            out["media_type"] = self.media_type
        return out


@dataclass(frozen=True)
class Resource(_Part):
    """A resource's contents, embedded: ``Resource(uri, text="...")`` or
    ``Resource(uri, blob=b"...", media_type=...)``."""

    uri: str
    text: str | None = None
    blob: bytes | None = None
    media_type: str | None = None

    def __post_init__(self) -> None:
        if self.blob is not None:
            object.__setattr__(self, "blob", _bytes(self.blob, "Resource blob"))
        if (self.text is None) == (self.blob is None):
            raise ValueError("Resource: give `text` or `blob`, one of them")

    def to_dict(self) -> ResourceContent:
        out: ResourceContent = {"kind": "resource", "uri": self.uri}
        if self.media_type is not None:
            out["media_type"] = self.media_type
        if self.text is not None:
            out["text"] = self.text
        if self.blob is not None:
            out["blob"] = _b64(self.blob)
        return out


Part: TypeAlias = Text | Image | Audio | Document | ResourceLink | Resource
"""Any content part."""

_FIELDS: dict[str, tuple[type[Part], frozenset[str], frozenset[str]]] = {
    # kind: (class, required fields, every field)
    "text": (Text, frozenset({"text"}), frozenset({"text"})),
    "image": (Image, frozenset(), frozenset({"data", "url", "media_type"})),
    "audio": (Audio, frozenset({"data", "media_type"}), frozenset({"data", "media_type"})),
    "document": (Document, frozenset(), frozenset({"data", "url", "media_type", "title", "filename"})),
    "resource_link": (
        ResourceLink,
        frozenset({"uri", "name"}),
        frozenset({"uri", "name", "description", "media_type"}),
    ),
    "resource": (Resource, frozenset({"uri"}), frozenset({"uri", "media_type", "text", "blob"})),
}
_BINARY = frozenset({"data", "blob"})


def from_dict(part: Mapping[str, Any]) -> Part:
    """A part from its canonical dict (as ``to_dict()`` and the runtime's histories give it).

    Raises ``ValueError`` naming what does not fit: an unknown kind or field, a missing
    field, or data that is not base64."""
    kind = part.get("kind")
    if not isinstance(kind, str) or kind not in _FIELDS:
        raise ValueError(f"not a content part: unknown kind {kind!r} (expected one of {', '.join(_FIELDS)})")
    cls, required, known = _FIELDS[kind]
    fields = {k: v for k, v in part.items() if k != "kind"}
    if unknown := sorted(set(fields) - known):
        raise ValueError(f"the {kind} part has no field {', '.join(map(repr, unknown))}")
    if missing := sorted(required - set(fields)):
        raise ValueError(f"the {kind} part needs {', '.join(map(repr, missing))}")
    for key in _BINARY & set(fields):
        try:
            fields[key] = base64.b64decode(fields[key], validate=True)
        except (binascii.Error, TypeError) as error:
            raise ValueError(f"the {kind} part's {key!r} is not base64: {error}") from None
    return cls(**fields)
