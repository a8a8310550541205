"""Write-rate anomalies: more than the threshold of writes a minute from one session is
flagged; past the optional hard limit, writes get 429 with Retry-After and store nothing."""

import logging

import pytest
from httpx import AsyncClient
from prometheus_client import REGISTRY
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import RateLimited
from app.core.logging import RequestIdFilter
from app.memories.write_rate import WriteRate
from app.models import Memory

NS = "user:rate"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def limited(client: AsyncClient) -> AsyncClient:
    """The client, with the default threshold (10) and a hard limit of 11 writes a minute."""
    client._transport.app.state.write_rate = WriteRate(flag_above=10, limit=11, flags_kept=100)
    return client


@pytest.fixture
def request_ids(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.handler.addFilter(RequestIdFilter())
    caplog.set_level(logging.WARNING, logger="app.memories.write_rate")
    return caplog


async def write(client: AsyncClient, n: int, session_id: str) -> object:
    body = {"namespace": NS, "content": f"Step {n} of the import finished.", "session_id": session_id}
    return await client.post("/v1/memories", json=body, headers={"X-Request-ID": f"req-{session_id}-{n}"})


async def stored(db_session: AsyncSession) -> int:
    return await db_session.scalar(select(func.count()).select_from(Memory).where(Memory.namespace == NS))


async def test_eleven_writes_a_minute_flag_the_session(limited: AsyncClient, request_ids):
    flags_before = REGISTRY.get_sample_value("hindsight_write_rate_flags_total") or 0.0
    for n in range(11):
        assert (await write(limited, n, "s-fast")).status_code == 201
    anomalies = (await limited.get("/debug/anomalies")).json()["anomalies"]
    assert [(a["session_id"], a["namespace"], a["writes"]) for a in anomalies] == [("s-fast", NS, 11)]
    assert anomalies[0]["first_seen"] <= anomalies[0]["last_seen"]
    warnings = [r for r in request_ids.records if r.levelno == logging.WARNING and "s-fast" in r.getMessage()]
    assert len(warnings) == 1 and "11" in warnings[0].getMessage()
    assert "Step" not in warnings[0].getMessage()  # never the content
    assert warnings[0].request_id == "req-s-fast-10"
    assert (REGISTRY.get_sample_value("hindsight_write_rate_flags_total") or 0.0) - flags_before == 1


async def test_past_the_hard_limit_a_write_gets_429_and_stores_nothing(limited: AsyncClient, db_session: AsyncSession):
    for n in range(11):
        assert (await write(limited, n, "s-fast")).status_code == 201
    count = await stored(db_session)
    refused = await write(limited, 11, "s-fast")
    assert refused.status_code == 429
    assert refused.json()["type"] == "/problems/rate-limited"
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    one_more = {"namespace": NS, "content": "One more.", "session_id": "s-fast"}
    batch = await limited.post("/v1/memories:batch", json={"items": [one_more]})
    assert batch.status_code == 429
    assert await stored(db_session) == count
    assert (await write(limited, 0, "s-calm")).status_code == 201  # another session is unaffected


async def test_batch_items_count_per_session(limited: AsyncClient):
    items = [{"namespace": NS, "content": f"Batch line {n}.", "session_id": "s-batch"} for n in range(12)]
    assert (await limited.post("/v1/memories:batch", json={"items": items})).status_code == 429
    assert (await limited.post("/v1/memories:batch", json={"items": items[:11]})).status_code == 200
    assert [a["session_id"] for a in (await limited.get("/debug/anomalies")).json()["anomalies"]] == ["s-batch"]


async def test_without_a_hard_limit_writes_are_only_flagged(client: AsyncClient):
    for n in range(12):
        assert (await write(client, n, "s-unlimited")).status_code == 201


def test_retry_after_is_when_the_oldest_write_leaves_the_window():
    clock = Clock()
    rate = WriteRate(flag_above=2, limit=3, flags_kept=10, clock=clock)
    for step in range(3):
        rate.admit([("s", NS)])
        clock.now += 10
    with pytest.raises(RateLimited) as refused:
        rate.admit([("s", NS)])
    assert refused.value.headers == {"Retry-After": "30"}  # the first write was 30 s ago
    clock.now += 30
    rate.admit([("s", NS)])
    assert len(rate.flags) == 1 and rate.flags[0].writes == 3


def test_a_burst_after_a_quiet_minute_is_a_new_flag():
    clock = Clock()
    rate = WriteRate(flag_above=1, limit=None, flags_kept=10, clock=clock)
    rate.admit([("s", NS), ("s", NS)])
    clock.now += 120
    rate.admit([("s", NS)])
    rate.admit([("s", NS), (None, NS)])
    assert [flag.writes for flag in rate.flags] == [2, 2]
