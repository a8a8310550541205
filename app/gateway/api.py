"""The gateway's client of the REST API: pooled, retried once on a dropped connection, bounded in time."""

from dataclasses import dataclass
from typing import Any

import anyio
import httpx

# A pooled connection the API closed between requests fails like this; one fresh attempt fixes it.
_DROPPED = (httpx.RemoteProtocolError, httpx.ConnectError, httpx.ReadError, httpx.WriteError)


class ApiProblem(Exception):
    """The API answered with a problem detail (RFC 9457)."""

    def __init__(self, problem: dict[str, Any]) -> None:
        self.problem = problem
        super().__init__(f"{problem.get('title', 'Error')}: {problem.get('detail', '')}")


class ApiUnavailable(Exception):
    """The API did not answer within the deadline, could not be reached, or answered 503."""


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: dict[str, Any] | None
    session_id: str
    authorization: str | None


class Api:
    def __init__(self, base_url: str, *, timeout_seconds: float, transport: httpx.AsyncBaseTransport | None = None):
        self.timeout_seconds = timeout_seconds
        self._http = httpx.AsyncClient(
            base_url=base_url,
            timeout=timeout_seconds,
            transport=transport,
            limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
        )

    async def send(self, call: Call) -> dict[str, Any] | None:
        """The API's JSON answer (None for 204); the deadline covers the retry too."""
        try:
            with anyio.fail_after(self.timeout_seconds):
                response = await self._send_with_retry(call)
        except (TimeoutError, httpx.TimeoutException, *_DROPPED) as error:
            raise ApiUnavailable(f"{type(error).__name__} after up to {self.timeout_seconds:g} s") from error
        if response.status_code == 503:  # the API's own "retry shortly": its database is away
            raise ApiUnavailable(f"the API is unavailable: {_problem_of(response).get('detail', '')}")
        if response.status_code >= 400:
            raise ApiProblem(_problem_of(response))
        return response.json() if response.content else None

    async def _send_with_retry(self, call: Call) -> httpx.Response:
        headers = {"X-Session-Id": call.session_id}
        if call.authorization:
            headers["Authorization"] = call.authorization
        try:
            return await self._http.request(call.method, call.path, json=call.body, headers=headers)
        except _DROPPED:
            return await self._http.request(call.method, call.path, json=call.body, headers=headers)

    async def aclose(self) -> None:
        await self._http.aclose()


def _problem_of(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and "title" in body:
        return body
    return {
        "type": f"/problems/http-{response.status_code}",
        "title": response.reason_phrase,
        "status": response.status_code,
        "detail": response.text[:500],
    }
