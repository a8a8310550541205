"""Rows can now vanish (a purge, an erasure): what read a memory before finds out with a 404, never a 500."""

import pytest
from sqlalchemy import text

from app.core.errors import NotFound
from app.memories import repository


async def test_feedback_on_a_memory_erased_after_it_was_read_is_a_404(client, db_session):
    written = await client.post("/v1/memories", json={"namespace": "user:race", "content": "User collects stamps."})
    memory = await repository.get(db_session, written.json()["memory"]["id"])
    await db_session.execute(text("DELETE FROM memories WHERE id = :id"), {"id": memory.id})
    with pytest.raises(NotFound):
        await repository.adjust_confidence(db_session, memory, useful=True, step=0.1, cap=0.95)
