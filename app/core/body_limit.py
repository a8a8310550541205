"""Request bodies past the configured size are refused (413) before they are read into memory:
a body that declares its length is refused at once, a streamed one as soon as it passes the limit."""

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.errors import PayloadTooLarge, problem_of, problem_response


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        received = 0
        exceeded = False

        async def limited_receive() -> Message:
            nonlocal received, exceeded
            if exceeded:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    exceeded = True  # the app sees a client that went away; the client gets a 413
                    return {"type": "http.disconnect"}
            return message

        async def send_unless_exceeded(message: Message) -> None:
            if not exceeded:
                await send(message)

        await self.app(scope, limited_receive, send_unless_exceeded)
        if exceeded:
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        error = PayloadTooLarge(f"the request body is larger than {self.max_bytes} bytes (HINDSIGHT_MAX_REQUEST_BYTES)")
        response = problem_response(problem_of(error), headers={"Connection": "close"})
        await response(scope, receive, send)
