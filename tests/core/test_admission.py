"""Admission: at most N requests of a lane use the database at once, callers are served in turn,
and a request that waits too long answers 503 instead of hanging."""

import asyncio
import time

import pytest
from httpx import ASGITransport, AsyncClient

from app.core.admission import Admission, AdmissionMiddleware, Busy, caller_of, lane_of


async def _hold(admission: Admission, caller: str, order: list[str], release: asyncio.Event) -> None:
    async with admission.slot("read", caller):
        order.append(caller)
        await release.wait()


async def test_waiting_callers_are_served_in_turn_not_in_arrival_order():
    admission = Admission(read_slots=1, write_slots=1, wait_seconds=5)
    order: list[str] = []
    gate = asyncio.Event()
    first = asyncio.create_task(_hold(admission, "busy", order, gate))
    await asyncio.sleep(0)
    # The busy caller queues five more, then a quiet caller one.
    queued = [asyncio.create_task(_hold(admission, "busy", order, gate)) for _ in range(5)]
    await asyncio.sleep(0)
    quiet = asyncio.create_task(_hold(admission, "quiet", order, gate))
    await asyncio.sleep(0)
    gate.set()
    await asyncio.gather(first, *queued, quiet)
    assert order.index("quiet") == 2  # right after the busy caller's next one, not after all five


async def test_a_request_that_waits_too_long_is_refused_and_the_slot_stays_usable():
    admission = Admission(read_slots=1, write_slots=1, wait_seconds=0.05)
    gate = asyncio.Event()
    holder = asyncio.create_task(_hold(admission, "a", [], gate))
    await asyncio.sleep(0)
    with pytest.raises(Busy):
        async with admission.slot("read", "b"):
            pass
    gate.set()
    await holder
    async with admission.slot("read", "b"):  # the refused wait left nothing behind
        pass


async def test_a_request_waits_past_the_admission_wait_while_its_lane_keeps_serving():
    """A burst larger than the slots drains at the rate the lane answers: the last of five
    waits five holding times, far past the 0.2 s wait, and is served, not refused."""
    admission = Admission(read_slots=1, write_slots=1, wait_seconds=0.2, max_wait_seconds=10)

    async def search(caller: str) -> float:
        async with admission.slot("read", caller):
            await asyncio.sleep(0.12)
        return time.perf_counter()

    began = time.perf_counter()
    finished = await asyncio.gather(*(search(f"client-{index}") for index in range(5)))
    assert max(finished) - began > 0.5


async def test_the_middleware_answers_503_with_retry_after_when_no_slot_comes():
    entered = asyncio.Event()
    leave = asyncio.Event()

    async def slow_app(scope, receive, send):
        entered.set()
        await leave.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    app = AdmissionMiddleware(slow_app, admission=Admission(read_slots=1, write_slots=1, wait_seconds=0.1))
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://test") as http:
        first = asyncio.create_task(http.post("/v1/memories/search", json={}))
        await entered.wait()
        refused = await http.post("/v1/memories/search", json={})
        writes = asyncio.create_task(http.post("/v1/memories", json={}))  # another lane: not refused
        await asyncio.sleep(0.2)
        leave.set()
        assert (await first).status_code == 200 and (await writes).status_code == 200
    assert refused.status_code == 503
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["type"] == "/problems/unavailable" and int(refused.headers["Retry-After"]) >= 1


def test_lanes_and_callers():
    scope = {"type": "http", "method": "POST", "path": "/v1/memories/search", "headers": [], "client": ("10.0.0.1", 1)}
    assert lane_of(scope) == "read"
    assert lane_of({**scope, "path": "/v1/memories"}) == "write"
    assert lane_of({**scope, "method": "GET", "path": "/v1/memories/x"}) == "read"
    assert lane_of({**scope, "method": "GET", "path": "/healthz"}) is None
    assert caller_of(scope) == "addr:10.0.0.1"
    keyed = caller_of({**scope, "headers": [(b"authorization", b"Bearer k1")]})
    assert keyed.startswith("key:") and "k1" not in keyed
