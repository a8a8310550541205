"""API keys scoped to namespace prefixes: 401 without a key, 403 outside its prefixes."""

import json
import logging
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator

import pytest
from httpx import ASGITransport, AsyncClient
from sqlalchemy import text

from app.core.auth import OPEN, Access, Unauthorized, authenticate, in_prefix, warn_if_open
from app.core.errors import Forbidden
from tests.conftest import _app


def test_a_prefix_covers_its_namespace_and_those_below_it_only():
    assert in_prefix("user:u1", "user:u1")
    assert in_prefix("user:u1:notes", "user:u1")
    assert not in_prefix("user:u10", "user:u1")
    assert in_prefix("shared:billing", "shared:")
    assert not in_prefix("shared", "shared:")


def test_authenticate_finds_the_key_and_its_scope():
    keys = {"k1": ["user:u1"], "k2": ["shared:"]}
    assert authenticate({}, None) is OPEN
    granted = authenticate(keys, "k2")
    assert granted.prefixes == ("shared:",)
    assert granted.principal and "k2" not in granted.principal  # names the key without showing it
    assert authenticate(keys, "k1").principal != granted.principal
    with pytest.raises(Unauthorized):
        authenticate(keys, None)
    with pytest.raises(Unauthorized):
        authenticate(keys, "k3")


def test_check_refuses_any_namespace_outside_and_unfiltered_listings():
    access = Access(prefixes=("user:u1",))
    access.check("user:u1", "user:u1:private")
    for namespaces in (("user:u2",), ("user:u1", "user:u2"), (None,)):
        with pytest.raises(Forbidden):
            access.check(*namespaces)
    OPEN.check(None, "anything")
    Access(prefixes=("*",)).check(None)  # an admin key


@pytest.fixture
def scope() -> dict[str, str]:
    tag = f"auth{uuid.uuid4().hex[:10]}"
    return {"u1": f"user:{tag}a", "u2": f"user:{tag}b", "shared": f"shared:{tag}", "tag": tag}


@pytest.fixture
async def keyed(settings, engine, embedder, scope) -> AsyncIterator[AsyncClient]:
    """The API with keys configured, on committed sessions; it removes what the test wrote."""
    keys = {"key-u1": [scope["u1"]], "key-u2": [scope["u2"]], "key-shared": ["shared:"]}
    app = _app(settings.model_copy(update={"api_keys": keys}), engine, embedder)
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://test") as http:
        yield http
    async with engine.begin() as connection:
        pattern = {"pattern": f"%{scope['tag']}%"}
        await connection.execute(text("DELETE FROM revision_log WHERE namespace LIKE :pattern"), pattern)
        await connection.execute(text("DELETE FROM memories WHERE namespace LIKE :pattern"), pattern)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def write(http: AsyncClient, key: str, namespace: str, content: str) -> dict:
    response = await http.post("/v1/memories", json={"namespace": namespace, "content": content}, headers=bearer(key))
    assert response.status_code == 201, response.text
    return response.json()["memory"]


async def test_without_a_key_every_call_but_health_and_docs_is_401(keyed, scope):
    search = {"namespace": scope["u1"], "query": "anything"}
    for headers in ({}, bearer("not-a-key"), {"Authorization": "Basic a2V5LXUxOg=="}):
        response = await keyed.post("/v1/memories/search", json=search, headers=headers)
        assert response.status_code == 401
        assert response.json()["type"] == "/problems/unauthorized"
    assert (await keyed.get("/debug/recent")).status_code == 401
    for path in ("/healthz", "/docs", "/openapi.json"):
        assert (await keyed.get(path)).status_code == 200, path


async def test_a_key_for_one_user_cannot_read_another(keyed, scope, caplog):
    caplog.set_level(logging.DEBUG)
    theirs = await write(keyed, "key-u2", scope["u2"], "User u2 is allergic to peanuts.")
    mine = await write(keyed, "key-u1", scope["u1"], "User u1 likes hiking.")
    u1 = bearer("key-u1")

    refused = [
        await keyed.get(f"/v1/memories/{theirs['id']}", headers=u1),
        await keyed.delete(f"/v1/memories/{theirs['id']}", headers=u1),
        await keyed.post(f"/v1/memories/{theirs['id']}/revise", json={"content": "x", "expected_version": 1}, headers=u1),
        await keyed.post(f"/v1/memories/{theirs['id']}/feedback", json={"useful": False}, headers=u1),
        await keyed.post("/v1/memories/search", json={"namespace": scope["u2"], "query": "allergy"}, headers=u1),
        await keyed.post("/v1/memories/search", json={"namespaces": [scope["u1"], scope["u2"]], "query": "x"}, headers=u1),
        await keyed.post("/v1/memories", json={"namespace": scope["u1"] + "0", "content": "a neighbour"}, headers=u1),
        await keyed.get("/debug/recent", headers=u1),  # every namespace
    ]
    for response in refused:
        assert response.status_code == 403, response.request.url
        assert response.json()["type"] == "/problems/forbidden"
        assert scope["u2"] not in response.text  # another tenant's namespace is never named

    assert (await keyed.get(f"/v1/memories/{theirs['id']}", headers=bearer("key-u2"))).json()["memory"]["status"] == "active"
    found = await keyed.post("/v1/memories/search", json={"namespace": scope["u1"], "query": "hiking"}, headers=u1)
    assert [hit["memory"]["id"] for hit in found.json()["hits"]] == [mine["id"]]
    assert "key-u1" not in caplog.text and "key-u2" not in caplog.text


async def test_a_shared_key_reads_shared_namespaces_only(keyed, scope):
    shared = await write(keyed, "key-shared", scope["shared"], "Invoices are due within 30 days.")
    key = bearer("key-shared")
    found = await keyed.post("/v1/memories/search", json={"namespace": scope["shared"], "query": "invoices"}, headers=key)
    assert [hit["memory"]["id"] for hit in found.json()["hits"]] == [shared["id"]]
    mine = await write(keyed, "key-u1", scope["u1"], "User u1 likes hiking.")
    assert (await keyed.get(f"/v1/memories/{mine['id']}", headers=key)).status_code == 403
    search = {"namespace": scope["u1"], "query": "hiking"}
    assert (await keyed.post("/v1/memories/search", json=search, headers=key)).status_code == 403


async def test_a_batch_refuses_only_the_items_outside_the_scope(keyed, scope):
    items = [{"namespace": scope["u1"], "content": "Mine."}, {"namespace": scope["u2"], "content": "Theirs."}]
    response = await keyed.post("/v1/memories:batch", json={"items": items}, headers=bearer("key-u1"))
    assert [result["status"] for result in response.json()["results"]] == [201, 403]


def test_an_open_service_says_so(caplog):
    warn_if_open({"k1": ["user:u1"]})
    assert not caplog.records
    warn_if_open({})
    assert "no API keys configured" in caplog.text


@pytest.mark.parametrize("prefixes", [[""], [], ["user:u1", " "]], ids=["empty-prefix", "no-prefix", "blank-prefix"])
def test_a_key_that_would_grant_nothing_stops_the_start_up(prefixes):
    env = {**os.environ, "HINDSIGHT_API_KEYS": json.dumps({"sekrit-key-value": prefixes})}
    started = subprocess.run(
        [sys.executable, "-c", "import app.core.settings"], env=env, capture_output=True, text=True, timeout=60
    )
    assert started.returncode != 0
    assert '"*" for an admin key' in started.stderr
    assert "sekrit-key-value" not in started.stderr  # the refusal never echoes a key
