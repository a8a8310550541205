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
CALLER_S = ("caller", "s", NS)


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
    anomalies = (await limited.get("/debug/anomalies", params={"namespace": NS})).json()["anomalies"]
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
    assert [a["session_id"] for a in (await limited.get("/debug/anomalies", params={"namespace": NS})).json()["anomalies"]] == ["s-batch"]


async def test_without_a_hard_limit_writes_are_only_flagged(client: AsyncClient):
    for n in range(12):
        assert (await write(client, n, "s-unlimited")).status_code == 201


async def test_retry_after_is_when_the_oldest_write_leaves_the_window(db_session: AsyncSession):
    clock = Clock()
    rate = WriteRate(flag_above=2, limit=3, flags_kept=10, clock=clock)
    for step in range(3):
        await rate.admit(db_session, [CALLER_S])
        clock.now += 10
    with pytest.raises(RateLimited) as refused:
        await rate.admit(db_session, [CALLER_S])
    assert refused.value.headers == {"Retry-After": "30"}  # the first write was 30 s ago
    clock.now += 30
    await rate.admit(db_session, [CALLER_S])
    flags = await rate.flags(db_session, namespace=NS)
    assert len(flags) == 1 and flags[0].writes == 3


async def test_a_burst_after_a_quiet_minute_is_a_new_flag(db_session: AsyncSession):
    clock = Clock()
    rate = WriteRate(flag_above=1, limit=None, flags_kept=10, clock=clock)
    await rate.admit(db_session, [CALLER_S, CALLER_S])
    clock.now += 120
    await rate.admit(db_session, [CALLER_S])
    await rate.admit(db_session, [CALLER_S, ("caller", None, NS)])
    assert [flag.writes for flag in await rate.flags(db_session, namespace=NS)] == [2, 2]


async def test_only_the_newest_flags_are_kept_and_idle_windows_are_dropped(db_session: AsyncSession):
    clock = Clock()
    rate = WriteRate(flag_above=1, limit=None, flags_kept=3, clock=clock)
    for number in range(5):
        await rate.admit(db_session, [("caller", f"s-{number}", NS)] * 2)
    assert [flag.session_id for flag in await rate.flags(db_session, namespace=NS)] == ["s-4", "s-3", "s-2"]
    clock.now += 61
    assert await rate.forget_idle(db_session) >= 5


@pytest.fixture
def two_tenants(client: AsyncClient, settings) -> AsyncClient:
    """Keys for two tenants, and a hard limit of 5 writes a minute."""
    app = client._transport.app
    app.state.settings = settings.model_copy(update={"api_keys": {"key-a": ["user:a"], "key-b": ["user:b"]}})
    app.state.write_rate = WriteRate(flag_above=10, limit=5, flags_kept=100)
    return client


async def _write_as(client: AsyncClient, key: str, namespace: str, n: int, session_id: str | None) -> int:
    body = {"namespace": namespace, "content": f"Entry {n} from {key}.", **({"session_id": session_id} if session_id else {})}
    response = await client.post("/v1/memories", json=body, headers={"Authorization": f"Bearer {key}"})
    return response.status_code


async def test_one_tenant_cannot_spend_anothers_window_by_naming_its_session(two_tenants: AsyncClient):
    assert [await _write_as(two_tenants, "key-a", "user:a", n, "victim-session") for n in range(6)] == [201] * 5 + [429]
    assert [await _write_as(two_tenants, "key-b", "user:b", n, "victim-session") for n in range(5)] == [201] * 5


async def test_writes_without_a_session_are_limited_in_a_window_of_their_own(two_tenants: AsyncClient):
    assert [await _write_as(two_tenants, "key-a", "user:a", n, None) for n in range(6)] == [201] * 5 + [429]
    assert await _write_as(two_tenants, "key-a", "user:a", 9, "s-1") == 201  # a session has its own window
    assert await _write_as(two_tenants, "key-b", "user:b", 9, None) == 201  # another caller too


async def test_without_keys_the_window_is_per_namespace_and_session(limited: AsyncClient):
    for n in range(11):
        assert (await limited.post("/v1/memories", json={"namespace": NS, "content": f"Line {n}.", "session_id": "s"})).status_code == 201
    assert (await limited.post("/v1/memories", json={"namespace": NS, "content": "Line 11.", "session_id": "s"})).status_code == 429
    other = {"namespace": "user:rate-other", "content": "Line 0.", "session_id": "s"}
    assert (await limited.post("/v1/memories", json=other)).status_code == 201
