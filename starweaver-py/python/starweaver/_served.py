"""What a module serves MCP clients besides tools: ``@resource``, ``@resource_template``
and ``@prompt`` (exported by ``starweaver.mcp``), which ``serve-mcp`` finds in the module
as it finds tools; and ``resource_updated``, which tells the clients subscribed to a
resource that it changed.

Functions may be sync or async; a sync one runs in a worker thread, so it never blocks
the loop that serves. Names and descriptions come from the function and its docstring,
parameters through the same pydantic path as a tool's.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, ParamSpec, TypeAlias, TypeVar, cast, overload

from ._native import NativeMcpPrompt, NativeMcpResource, NativeMcpResourceTemplate
from .content import Audio, Document, Image, Part, Resource, ResourceLink, Text
from .exceptions import RegistrationError

if TYPE_CHECKING:
    from . import _schema
    from ._native import NativeMcpService
    from .types import ContentPart

__all__ = [
    "Completer",
    "MCPPrompt",
    "MCPResource",
    "MCPResourceTemplate",
    "PromptMessage",
    "prompt",
    "resource",
    "resource_template",
    "resource_updated",
]

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
PARTS = (Text, Image, Audio, Document, ResourceLink, Resource)

Completer: TypeAlias = Sequence[str] | Callable[[str], Iterable[str] | Awaitable[Iterable[str]]]
"""What completes one argument: a list of choices (those starting with what the user typed
are offered, in order), or a function, sync or async, of what the user typed that gives
the values to offer, best first. MCP sends the first 100."""


@dataclass(frozen=True)
class PromptMessage:
    """One message of a prompt: ``PromptMessage("user", "Review this:")``; the content is
    text (a ``str``) or any ``starweaver.content`` part (an ``Image``, a ``Resource``...)."""

    role: Literal["user", "assistant"]
    content: str | Part

    def __post_init__(self) -> None:
        if self.role not in ("user", "assistant"):
            raise ValueError(f"PromptMessage: role must be 'user' or 'assistant', got {self.role!r}")
        content: object = self.content  # callers the type checker has not seen may pass anything
        if not isinstance(content, (str, *PARTS)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"PromptMessage: content must be a str or a starweaver.content part, not {type(content).__name__}"
            )

    def to_dict(self) -> dict[str, object]:
        """The message as the runtime takes it: ``{"role", "content": <canonical part>}``."""
        content = Text(self.content) if isinstance(self.content, str) else self.content
        return {"role": self.role, "content": content.to_dict()}


class _Served(Generic[P, R_co]):
    """A decorated function: calling it calls the function, unchanged, so it can be
    unit-tested directly."""

    __wrapped__: Callable[P, R_co]

    def __init__(self, fn: Callable[P, R_co]) -> None:
        self._fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co:
        return self._fn(*args, **kwargs)


class MCPResource(_Served[P, R_co]):
    """A function served as the resource at ``uri`` (``@resource``)."""

    native: NativeMcpResource
    """The runtime's handle: what ``serve-mcp`` serves."""

    def __init__(
        self,
        fn: Callable[P, R_co],
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
    ) -> None:
        super().__init__(fn)
        self.uri = uri
        if "{" in uri:
            raise RegistrationError(
                f"invalid resource `{uri}`: its URI is a template; serve it with `@resource_template`"
            )
        spec = _spec(fn, uri, "resource")
        _check_parameters(spec, set(), f"resource `{uri}`")
        self.native = NativeMcpResource(
            uri,
            name or fn.__name__,
            _reader(fn, spec, f"resource `{uri}`"),
            title=title,
            description=description or spec.description,
            mime_type=mime_type,
        )

    def __repr__(self) -> str:
        return f"MCPResource({self.uri!r})"


class MCPResourceTemplate(_Served[P, R_co]):
    """A function served as the resource template ``uri_template`` (``@resource_template``)."""

    native: NativeMcpResourceTemplate
    """The runtime's handle: what ``serve-mcp`` serves."""

    def __init__(
        self,
        fn: Callable[P, R_co],
        uri_template: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        complete: Mapping[str, Completer] | None = None,
    ) -> None:
        super().__init__(fn)
        self.uri_template = uri_template
        spec = _spec(fn, uri_template, "resource template")
        named = f"resource template `{uri_template}`"
        self.native = NativeMcpResourceTemplate(
            uri_template,
            name or fn.__name__,
            _reader(fn, spec, named),
            title=title,
            description=description or spec.description,
            mime_type=mime_type,
            completers=_completers(complete),
        )
        _check_parameters(spec, set(self.native.variables), named)

    def __repr__(self) -> str:
        return f"MCPResourceTemplate({self.uri_template!r})"


class MCPPrompt(_Served[P, R_co]):
    """A function served as a prompt (``@prompt``): its parameters are the prompt's
    arguments (required unless they have a default), described by the docstring's
    ``Args:`` or ``Annotated[str, Field(description=...)]``."""

    native: NativeMcpPrompt
    """The runtime's handle: what ``serve-mcp`` serves."""

    def __init__(
        self,
        fn: Callable[P, R_co],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        complete: Mapping[str, Completer] | None = None,
    ) -> None:
        super().__init__(fn)
        self.name = name or fn.__name__
        spec = _spec(fn, self.name, "prompt")
        properties, required = _fields(spec)
        arguments = [(arg, about.get("description"), arg in required) for arg, about in properties.items()]
        run = _runner(fn)

        async def get(given: dict[str, str]) -> list[dict[str, object]]:
            args, kwargs = spec.decode(json.dumps(given).encode())
            return _messages(await run(*args, **kwargs), self.name)

        self.native = NativeMcpPrompt(
            self.name,
            get,
            title=title,
            description=description or spec.description,
            arguments=arguments,
            completers=_completers(complete),
        )

    def __repr__(self) -> str:
        return f"MCPPrompt({self.name!r})"


def resource(
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
) -> Callable[[Callable[P, R]], MCPResource[P, R]]:
    """Serves a function as the resource at ``uri``: ``@resource("docs://readme",
    mime_type="text/markdown")``. It takes no arguments and returns the contents: a ``str``
    (text), ``bytes`` (a blob), a ``starweaver.content`` part (an ``Image`` with data is a
    blob of its media type; a ``Resource`` sets the URI and media type itself), or a list
    of them. ``name`` defaults to the function's name, ``description`` to its docstring.
    A function that raises answers the read with an error carrying its message
    (``InvalidArguments`` as invalid params)."""

    def decorate(fn: Callable[P, R]) -> MCPResource[P, R]:
        return MCPResource(fn, uri, name=name, title=title, description=description, mime_type=mime_type)

    return decorate


def resource_template(
    uri_template: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    complete: Mapping[str, Completer] | None = None,
) -> Callable[[Callable[P, R]], MCPResourceTemplate[P, R]]:
    """Serves a function as a resource template (RFC 6570 level 1):
    ``@resource_template("users://{id}/profile")``. A read of a URI the template gives
    calls the function with the URI's variables as its parameters of the same names
    (validated and converted like a tool's arguments), and it returns contents as for
    ``@resource``. ``complete`` maps a variable to its completer."""

    def decorate(fn: Callable[P, R]) -> MCPResourceTemplate[P, R]:
        return MCPResourceTemplate(
            fn, uri_template, name=name, title=title, description=description, mime_type=mime_type, complete=complete
        )

    return decorate


@overload
def prompt(fn: Callable[P, R], /) -> MCPPrompt[P, R]: ...


@overload
def prompt(
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    complete: Mapping[str, Completer] | None = None,
) -> Callable[[Callable[P, R]], MCPPrompt[P, R]]: ...


def prompt(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    complete: Mapping[str, Completer] | None = None,
) -> MCPPrompt[P, R] | Callable[[Callable[P, R]], MCPPrompt[P, R]]:
    """Serves a function as a prompt: ``@prompt`` or ``@prompt(name=..., complete={...})``.
    Its parameters are the prompt's arguments (MCP sends strings; they are validated and
    converted like a tool's arguments, a bad one answered with invalid params naming it).
    It returns the messages: a ``str`` (one user message), a ``starweaver.content`` part
    (one user message holding it), a ``PromptMessage``, or a list of these."""

    def decorate(function: Callable[P, R]) -> MCPPrompt[P, R]:
        return MCPPrompt(function, name=name, title=title, description=description, complete=complete)

    return decorate(fn) if fn is not None else decorate


SERVING: list[NativeMcpService] = []
"""The services serving in this process (``serve-mcp`` adds its own)."""


def resource_updated(uri: str) -> None:
    """Tells the clients subscribed to the resource at ``uri`` that it changed (MCP's
    ``notifications/resources/updated``); they read it again if they want. Call it from
    anywhere, a tool included, while ``serve-mcp`` serves; otherwise it does nothing."""
    for service in SERVING:
        service.resource_updated(uri)


def _spec(fn: Callable[..., object], name: str, kind: str) -> _schema.CallSpec:
    from . import _schema  # pydantic loads with the first decorated function, not at import

    spec = _schema.inspect_callable(fn, name=name, parameters_schema=None, localns=None, derive_return=False, kind=kind)
    if spec.takes_context:
        raise RegistrationError(
            f"invalid {kind} `{name}`: it cannot take a `ToolContext` (only tools are called with one)"
        )
    return spec


def _runner(fn: Callable[..., object]) -> Callable[..., Awaitable[object]]:
    """``fn`` as a coroutine function: an async one as it is; a sync one in a worker thread."""
    import asyncio
    import inspect  # loaded by pydantic already; kept out of the import

    if inspect.iscoroutinefunction(fn):
        return fn

    async def run(*args: object, **kwargs: object) -> object:
        return await asyncio.to_thread(fn, *args, **kwargs)

    return run


def _check_parameters(spec: _schema.CallSpec, variables: set[str], named: str) -> None:
    """The function's parameters must be the template's ``variables`` (for a static
    resource, none), those without a default at least."""
    properties, required = _fields(spec)
    parameters = set(properties)
    if missing := sorted(variables - parameters):
        raise RegistrationError(
            f"invalid {named}: the function has no parameter for {_listed(missing)}; "
            "each template variable is passed as the parameter of its name"
        )
    if unfilled := sorted(required - variables):
        where = "name it in the template, or give it a default" if variables else "give it a default"
        raise RegistrationError(f"invalid {named}: nothing gives its parameter {_listed(unfilled)}; {where}")


def _fields(spec: _schema.CallSpec) -> tuple[Mapping[str, Mapping[str, Any]], set[str]]:
    """The parameters' schemas by name, and the names of the required ones."""
    properties = cast("Mapping[str, Mapping[str, Any]]", spec.parameters.get("properties", {}))
    return properties, set(cast("list[str]", spec.parameters.get("required", [])))


def _reader(
    fn: Callable[..., object], spec: _schema.CallSpec, named: str
) -> Callable[[str, dict[str, str]], Awaitable[list[ContentPart]]]:
    """What the runtime calls to read a resource: the URI's variables as the parameters."""
    run = _runner(fn)

    async def read(uri: str, given: dict[str, str]) -> list[ContentPart]:
        args, kwargs = spec.decode(json.dumps(given).encode())
        return _contents(await run(*args, **kwargs), uri, named)

    return read


def _listed(names: Sequence[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def _contents(value: object, uri: str, named: str) -> list[ContentPart]:
    """A resource function's return as canonical parts: ``str`` is text, ``bytes`` a blob
    of the resource's media type, a part as it is, a list each of these."""
    if isinstance(value, str):
        return [Text(value).to_dict()]
    if isinstance(value, (bytes, bytearray)):
        return [Resource(uri, blob=bytes(value)).to_dict()]
    if isinstance(value, PARTS):
        return [value.to_dict()]
    if isinstance(value, (list, tuple)):
        return [part for item in cast("Sequence[object]", value) for part in _contents(item, uri, named)]
    raise TypeError(
        f"{named} returned {type(value).__name__}; return a str, bytes, a starweaver.content part or a list of them"
    )


def _messages(value: object, name: str) -> list[dict[str, object]]:
    """A prompt function's return as messages: a ``str`` or a part is one user message."""
    if isinstance(value, PromptMessage):
        return [value.to_dict()]
    if isinstance(value, (str, *PARTS)):
        return [PromptMessage("user", value).to_dict()]
    if isinstance(value, (list, tuple)):
        return [message for item in cast("Sequence[object]", value) for message in _messages(item, name)]
    raise TypeError(
        f"prompt `{name}` returned {type(value).__name__}; return a str, a starweaver.content part, "
        "a PromptMessage or a list of them"
    )


def _completers(
    complete: Mapping[str, Completer] | None,
) -> dict[str, Callable[[str, dict[str, str]], Awaitable[list[str]]]] | None:
    """The completers as the runtime calls them: ``(value, arguments)`` to a coroutine of
    the values."""
    if complete is None:
        return None
    return {argument: _completer(argument, given) for argument, given in complete.items()}


def _completer(argument: str, given: object) -> Callable[[str, dict[str, str]], Awaitable[list[str]]]:
    import inspect

    if callable(given):
        complete = cast("Callable[[str], Iterable[str] | Awaitable[Iterable[str]]]", given)

        async def call(value: str, _arguments: dict[str, str]) -> list[str]:
            values = complete(value)
            if inspect.isawaitable(values):
                values = await values
            return [str(v) for v in values]

        return call
    if isinstance(given, str) or not isinstance(given, Sequence):
        raise RegistrationError(f"the completer of `{argument}` must be a list of choices or a function, got {given!r}")
    choices = [str(choice) for choice in cast("Sequence[object]", given)]

    async def offer(value: str, _arguments: dict[str, str]) -> list[str]:
        return [choice for choice in choices if choice.startswith(value)]

    return offer
