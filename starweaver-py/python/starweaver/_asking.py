"""What `ctx.elicit`, `ctx.sample` and an agent's elicitation handler need from Python:
schemas of the asked types, answers validated into them, and the runtime's forms of
both. The runtime calls these; `starweaver.elicitation` holds what users see."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from .elicitation import Accepted, Cancelled, Declined, Elicited, Sampled

if TYPE_CHECKING:
    from ._native import ToolContext
    from .agent import ElicitationHandler
    from .mcp import SamplingHandler
    from .types import SamplingMessageDict


def schema_of(kind: Any) -> dict[str, Any]:
    """The JSON schema of what `kind` asks for: a dict is the schema itself; a type goes
    through pydantic, its nested definitions inlined (MCP's form elicitation takes an
    object of primitive properties, and no `$ref`)."""
    if isinstance(kind, Mapping):
        return dict(kind)  # pyright: ignore[reportUnknownArgumentType]
    from pydantic import TypeAdapter  # only when a tool asks: importing starweaver stays cheap

    schema = TypeAdapter(kind).json_schema()
    definitions = schema.pop("$defs", {})

    def inline(value: Any, seen: tuple[str, ...] = ()) -> Any:
        if isinstance(value, dict):
            node = cast("dict[str, Any]", value)
            reference = node.get("$ref")
            if isinstance(reference, str) and reference.startswith("#/$defs/"):
                name = reference.removeprefix("#/$defs/")
                if name in seen:
                    raise TypeError(
                        f"{kind!r} refers to itself through {name!r}; what a tool asks the user for is "
                        "an object of primitive properties"
                    )
                return inline(definitions[name], (*seen, name))
            return {key: inline(item, seen) for key, item in node.items()}
        if isinstance(value, list):
            return [inline(item, seen) for item in value]  # pyright: ignore[reportUnknownVariableType]
        return value

    inlined: dict[str, Any] = inline(schema)
    return inlined


def elicited(kind: Any, answer: Mapping[str, Any]) -> Elicited[Any]:
    """The answer as one of the three, an accepted value validated into `kind` (a schema
    dict gives the content as it came)."""
    action = answer["action"]
    if action == "decline":
        return Declined()
    if action == "cancel":
        return Cancelled()
    content = answer.get("content", {})
    if isinstance(kind, Mapping):
        return Accepted(content)
    from pydantic import TypeAdapter

    return Accepted(TypeAdapter(kind).validate_python(content))


def sampling_messages(messages: str | Sequence[object]) -> list[dict[str, str]]:
    """`ctx.sample`'s messages as the runtime takes them: a prompt, or prompts and
    `{"role", "content"}` dicts."""
    if isinstance(messages, str):
        messages = [messages]
    result: list[dict[str, str]] = []
    for message in messages:
        if isinstance(message, str):
            result.append({"role": "user", "text": message})
        elif isinstance(message, Mapping) and isinstance(
            text := cast("Mapping[str, object]", message).get("content"), str
        ):
            role = cast("Mapping[str, object]", message).get("role", "user")
            result.append({"role": str(role), "text": text})
        else:
            raise TypeError(
                'a sampling message is a str or a {"role": "user" | "assistant", "content": str} dict, '
                f"got {message!r}"
            )
    return result


def sampled(answer: Mapping[str, Any]) -> Sampled:
    return Sampled(answer["text"], answer.get("model"), answer.get("stop_reason"))


def answer_of(answer: object) -> dict[str, Any]:
    """What an elicitation handler returned, as the runtime takes it: one of the three,
    or a dict (an accepted value). Anything else is a `TypeError` naming it."""
    if isinstance(answer, Accepted):
        from pydantic import TypeAdapter

        data: object = cast("Accepted[object]", answer).data
        content: object = TypeAdapter(Any).dump_python(data, mode="json")
        if not isinstance(content, dict):
            raise TypeError(f"an accepted answer must be an object, got {type(data).__name__}")
        return {"action": "accept", "content": cast("dict[str, Any]", content)}
    if isinstance(answer, Declined):
        return {"action": "decline"}
    if isinstance(answer, Cancelled):
        return {"action": "cancel"}
    if isinstance(answer, Mapping):
        return {"action": "accept", "content": dict(answer)}  # pyright: ignore[reportUnknownArgumentType]
    raise TypeError(
        f"an elicitation handler must return Accepted(data), Declined(), Cancelled() or a dict, got {type(answer).__name__}"
    )


def runtime_handler(
    handler: ElicitationHandler,
) -> Callable[[ToolContext, str, dict[str, Any]], Awaitable[dict[str, Any]]]:
    """An application's elicitation handler as the runtime calls it: a coroutine function
    whose answer is in the runtime's form, whether the handler is sync or async."""

    async def ask(ctx: ToolContext, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        answer = handler(ctx, message, schema)
        if isinstance(answer, Awaitable):
            answer = await answer
        return answer_of(answer)

    return ask


def runtime_sampler(handler: SamplingHandler) -> Callable[[ToolContext, dict[str, Any]], Awaitable[dict[str, Any]]]:
    """An application's sampling handler as the runtime calls it: a coroutine function
    taking the request as the runtime gives it and answering in the runtime's form; a
    `str` answer is the completion's text. Anything else is a `TypeError` naming it."""

    async def sample(ctx: ToolContext, request: dict[str, Any]) -> dict[str, Any]:
        messages: list[SamplingMessageDict] = [{"role": m["role"], "content": m["text"]} for m in request["messages"]]
        # `object`: an application's handler may return anything, and is told what it did.
        answer: object = handler(
            ctx,
            messages,
            max_tokens=request["max_tokens"],
            system_prompt=request.get("system_prompt"),
            temperature=request.get("temperature"),
        )
        if isinstance(answer, Awaitable):
            answer = await cast("Awaitable[object]", answer)
        if isinstance(answer, str):
            return {"text": answer}
        if isinstance(answer, Sampled):
            return {"text": answer.text, "model": answer.model, "stop_reason": answer.stop_reason}
        raise TypeError(f"a sampling handler must return a str or a Sampled, got {type(answer).__name__}")

    return sample
