"""POST /v1/conversations: messages kept verbatim, re-sending stores nothing new, bad input refused alone."""

import asyncio

from sqlalchemy import func, select, text

from app.models import ConversationMessage, Memory
from tests.conversations.conftest import NS, memory, remember, said


async def count(db_session, model, namespace: str = NS) -> int:
    return await db_session.scalar(select(func.count()).select_from(model).where(model.namespace == namespace))


async def test_every_message_is_an_episodic_memory_with_its_time_session_role_and_id(client):
    out = await remember(
        client,
        [
            said("Can you help me plan a trip to Lisbon?", id="m1", at="2025-05-01T09:00:00Z"),
            said("Of course! When are you going?", role="assistant", id="m2", at="2025-05-01T09:00:07Z"),
            said("Flights: LIS 09:40 €120", role="tool", name="flight_search", id="m3", at="2025-05-01T09:00:09Z"),
        ],
        extract="none",
    )
    assert (out["received"], out["stored"], out["already_stored"], out["rejected"]) == (3, 3, 0, 0)
    assert out["extraction"]["extractor"] == "none"
    stored = [await memory(client, outcome["memory_ids"][0]) for outcome in out["messages"]]
    assert [m["content"] for m in stored] == [
        "Can you help me plan a trip to Lisbon?",
        "Of course! When are you going?",
        "Flights: LIS 09:40 €120",
    ]
    assert {m["memory_type"] for m in stored} == {"episodic"}
    assert [m["created_at"] for m in stored] == ["2025-05-01T09:00:00Z", "2025-05-01T09:00:07Z", "2025-05-01T09:00:09Z"]
    assert [
        (m["source"]["role"], m["source"]["kind"], m["source"]["speaker"], m["source"]["message_id"]) for m in stored
    ] == [
        ("user", "user", "user", "m1"),
        ("assistant", "agent", "assistant", "m2"),
        ("tool", "tool", "flight_search", "m3"),
    ]
    assert {m["source"]["session_id"] for m in stored} == {"s1"}


async def test_resending_the_same_messages_stores_nothing_new(client, db_session):
    messages = [said("I live in Austin, Texas.", id="a"), said("Noted!", role="assistant", id="b")]
    first = await remember(client, messages)
    memories, rows = await count(db_session, Memory), await count(db_session, ConversationMessage)
    assert first["stored"] == 2 and len(first["extraction"]["memories"]) == 1

    again = await remember(client, messages)
    assert (again["stored"], again["already_stored"]) == (0, 2)
    assert again["extraction"]["memories"] == []  # extracted the first time: not again
    assert [o["memory_ids"] for o in again["messages"]] == [o["memory_ids"] for o in first["messages"]]
    assert (await count(db_session, Memory), await count(db_session, ConversationMessage)) == (memories, rows)


async def test_messages_without_ids_are_recognised_by_their_content_and_time(client, db_session):
    messages = [said("ok", at="2025-01-01T10:00:00Z"), said("ok", at="2025-01-01T10:00:00Z"), said("thanks")]
    first = await remember(client, messages, extract="none")
    assert first["stored"] == 3  # the same words twice are two messages
    assert len({o["message_id"] for o in first["messages"]}) == 3
    again = await remember(client, messages, extract="none")
    assert (again["stored"], again["already_stored"]) == (0, 3)
    assert await count(db_session, Memory) == 3


async def test_an_id_reused_for_other_content_is_refused_and_the_rest_stored(client):
    await remember(client, [said("I like tea.", id="x")], extract="none")
    out = await remember(client, [said("I like coffee.", id="x"), said("And cake.", id="y")], extract="none")
    assert [(o["message_id"], o["status"]) for o in out["messages"]] == [("x", "rejected"), ("y", "stored")]
    assert out["messages"][0]["problem"]["type"] == "/problems/conflict"


async def test_a_message_with_sensitive_data_is_refused_alone(client, db_session):
    out = await remember(client, [said("My card is 4111 1111 1111 1111."), said("I live in Lisbon.")])
    rejected, stored = out["messages"]
    assert rejected["status"] == "rejected" and rejected["problem"]["type"] == "/problems/sensitive-content"
    assert "bank_card" in rejected["problem"]["detail"]
    assert stored["status"] == "stored" and out["rejected"] == 1
    contents = (await db_session.execute(select(Memory.content).where(Memory.namespace == NS))).scalars().all()
    assert not any("4111" in content for content in contents)


async def test_sensitive_data_in_a_name_or_id_refuses_the_message_and_in_the_session_the_request(client, db_session):
    out = await remember(client, [said("hello", name="password=hunter2"), said("hi", id="sk-abcdefghijklmnopqrstuvwx")], extract="none")
    assert [(m["status"], m["message_id"]) for m in out["messages"]] == [("rejected", "withheld:0"), ("rejected", "withheld:1")]
    refused = await remember(client, [said("hello")], session_id="secret: password=hunter2", expect=422)
    assert refused["type"] == "/problems/sensitive-content"
    assert await count(db_session, Memory) == 0


async def test_a_long_message_is_kept_whole_in_parts(client, settings):
    words = " ".join(f"word{index}" for index in range(2 * settings.max_content_chars // 8))
    out = await remember(client, [said(words, id="long")], extract="none")
    parts = [await memory(client, memory_id) for memory_id in out["messages"][0]["memory_ids"]]
    assert len(parts) >= 2 and all(len(part["content"]) <= settings.max_content_chars for part in parts)
    assert " ".join(part["content"] for part in parts) == words
    assert [part["source"]["part"] for part in parts] == [f"{n}/{len(parts)}" for n in range(1, len(parts) + 1)]


async def test_bad_requests_are_refused_whole(client, db_session):
    future = await remember(client, [said("hi", at="2999-01-01T00:00:00Z")], expect=422)
    assert "future" in future["detail"]
    await remember(client, [said("a", id="same"), said("b", id="same")], expect=422)
    await remember(client, [said("   ")], expect=422)
    await remember(client, [{"role": "robot", "content": "beep"}], expect=422)
    await remember(client, [said("hi")], extract="llm", expect=422)  # no LLM configured
    await remember(client, [], expect=422)
    assert await count(db_session, Memory) == 0


async def test_two_requests_carrying_the_same_messages_at_once_store_them_once(committing, tag, engine):
    client = await committing()
    namespace = f"user:{tag}"
    messages = [said(f"Line {n}: I like tea number {n}.", id=f"t{n}") for n in range(6)]
    body = {"namespace": namespace, "session_id": "s1", "messages": messages}
    # The second carries them in the opposite order: still no deadlock.
    reversed_body = {**body, "messages": messages[::-1]}
    first, second = await asyncio.gather(
        client.post("/v1/conversations", json=body), client.post("/v1/conversations", json=reversed_body)
    )
    assert first.status_code == second.status_code == 200, (first.text, second.text)
    assert first.json()["stored"] + second.json()["stored"] == 6
    assert first.json()["already_stored"] + second.json()["already_stored"] == 6
    async with engine.connect() as connection:
        episodic = await connection.scalar(
            text("SELECT count(*) FROM memories WHERE namespace = :ns AND memory_type = 'episodic'"), {"ns": namespace}
        )
        items = await connection.scalar(text("SELECT count(*) FROM working_items WHERE namespace = :ns"), {"ns": namespace})
    assert (episodic, items) == (6, 6)
