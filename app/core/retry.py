"""A request whose transaction lost to a concurrent one (PostgreSQL chose it as a deadlock victim,
or a serialization failure) is run again, a few times, before its 503 goes out: the database
rolled all of it back, so nothing it did is left to repeat twice."""

import asyncio
import random

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.asgi import read_body, replaying
from app.core.errors import LOST_TO_CONFLICT


class RetryOnConflictMiddleware:
    def __init__(self, app: ASGIApp, *, retries: int) -> None:
        self.app = app
        self.retries = retries

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.retries == 0:
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        for attempt in range(self.retries + 1):
            scope.pop(LOST_TO_CONFLICT, None)
            answer = await self._attempt(scope, body, receive, send, last=attempt == self.retries)
            if answer == "sent":
                return
            await asyncio.sleep(random.uniform(0.01, 0.05) * (attempt + 1))  # let the winner finish

    async def _attempt(self, scope: Scope, body: list[Message], receive: Receive, send: Send, *, last: bool) -> str:
        """Run the app once; "sent" if its answer went out, "retry" if it was held back."""
        held = False

        async def send_unless_lost(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start" and scope.get(LOST_TO_CONFLICT) and not last:
                held = True
            if not held:
                await send(message)

        await self.app(scope, replaying(body, receive), send_unless_lost)
        return "retry" if held else "sent"
