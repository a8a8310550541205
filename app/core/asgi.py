"""Reading a request's body once in a middleware and handing it on unchanged."""

from starlette.types import Message, Receive


async def read_body(receive: Receive) -> list[Message]:
    """Every message of the request body (or up to the client leaving)."""
    messages: list[Message] = []
    while not messages or messages[-1].get("more_body", False):
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":  # the client left
            break
    return messages


def replaying(messages: list[Message], receive: Receive) -> Receive:
    """A `receive` that gives the read messages first, then whatever comes (a disconnect)."""
    pending = list(messages)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay


def body_of(messages: list[Message]) -> bytes:
    return b"".join(message.get("body", b"") for message in messages if message["type"] == "http.request")
