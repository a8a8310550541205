"""SQL of `namespace_state`."""

from collections.abc import Mapping, Sequence

from sqlalchemy import Text, any_, bindparam, select, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from app.core.database import fetch
from app.models import NamespaceState

# One statement per commit for every namespace it wrote: the generation goes up by one, the
# memories stored are counted (its size), the clients' new memories count towards the review,
# whose counter is reset when it reaches the period (0: never). Rows are taken in namespace
# order, so two commits cannot wait on each other's rows.
_COMMITTED = text(
    """
    INSERT INTO namespace_state AS state (namespace, generation, writes_since_review, memories)
    SELECT written.namespace, 1,
           CASE WHEN :every > 0 AND written.new >= :every THEN 0 ELSE written.new END, written.stored
    FROM unnest(CAST(:namespaces AS text[]), CAST(:new AS bigint[]), CAST(:stored AS bigint[]))
         AS written(namespace, new, stored)
    ORDER BY written.namespace
    ON CONFLICT (namespace) DO UPDATE SET
        generation = state.generation + 1,
        writes_since_review = (
            SELECT CASE WHEN :every > 0 AND state.writes_since_review + written.new >= :every THEN 0
                        ELSE state.writes_since_review + written.new END
            FROM unnest(CAST(:namespaces AS text[]), CAST(:new AS bigint[])) AS written(namespace, new)
            WHERE written.namespace = excluded.namespace
        ),
        memories = state.memories + excluded.memories,
        updated_at = now()
    RETURNING namespace, writes_since_review
    """
).bindparams(bindparam("namespaces"), bindparam("new"), bindparam("stored"), bindparam("every"))


def committed(
    session: Session, new_memories: Mapping[str, int], stored: Mapping[str, int], *, review_every: int
) -> list[str]:
    """Record a commit's writes (sync: runs in the session's before-commit hook): per namespace,
    the clients' new memories and all memories stored; the namespaces whose periodic review is
    now due."""
    namespaces = sorted(new_memories)
    rows = session.execute(
        _COMMITTED,
        {
            "namespaces": namespaces,
            "new": [new_memories[name] for name in namespaces],
            "stored": [stored.get(name, 0) for name in namespaces],
            "every": review_every,
        },
    )
    # A namespace that gained memories and whose counter reads 0 was just reset: it is due.
    return [namespace for namespace, since_review in rows.all() if new_memories[namespace] and not since_review]


# Read before every search: built once, run as driver SQL (app.core.database.fetch).
_GENERATIONS = select(NamespaceState.namespace, NamespaceState.generation).where(
    NamespaceState.namespace == any_(bindparam("namespaces", type_=ARRAY(Text)))
)


async def generations(session: AsyncSession, namespaces: Sequence[str]) -> dict[str, int]:
    """Each namespace's generation; 0 for one never written."""
    found = dict(await fetch(session, _GENERATIONS, {"namespaces": list(namespaces)}))
    return {namespace: found.get(namespace, 0) for namespace in namespaces}


async def size(session: AsyncSession, namespace: str) -> int:
    """How many memories were ever written to the namespace (a size, not a live count)."""
    return int(await session.scalar(select(NamespaceState.memories).where(NamespaceState.namespace == namespace)) or 0)


async def forget_empty(session: AsyncSession) -> int:
    """Drop the state of namespaces that hold no memory any more."""
    result = await session.execute(
        text("DELETE FROM namespace_state AS state WHERE NOT EXISTS (SELECT 1 FROM memories WHERE namespace = state.namespace)")
    )
    return result.rowcount or 0
