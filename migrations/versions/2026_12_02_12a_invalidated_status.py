"""Status `invalidated` ("this was never right", beside `superseded`: "it was true, then
replaced"), with its reason and time on the memory, and the INVALIDATE decision that records
it in the revision log so it rolls back like any revision.

The reason and time are columns, not metadata: metadata is the client's, and a version
snapshot must carry them for rollback and `as_of` to restore them exactly.

Revision ID: 12a
Revises: 0009
Create Date: 2026-12-02
"""

from collections.abc import Sequence

from alembic import op

revision: str = "12a"
down_revision: str | None = "0009"
branch_labels: Sequence[str] | None = None
depends_on: Sequence[str] | None = None

_STATUSES = "'active', 'superseded', 'uncertain', 'archived', 'deleted'"
_DECISIONS = "'CONFLICT', 'REFINE', 'COEXIST', 'UNRELATED', 'DUPLICATE'"


def _replace_check(table: str, column: str, allowed: str) -> None:
    """Swap the check constraint on one column for one allowing `allowed`. The old one is
    found by its definition: the initial migration's names went through the metadata's
    naming convention."""
    op.execute(
        f"""
        DO $$
        DECLARE found text;
        BEGIN
            FOR found IN
                SELECT conname FROM pg_constraint
                WHERE conrelid = '{table}'::regclass AND contype = 'c'
                  AND pg_get_constraintdef(oid) ~ '\\m{column}\\M'
            LOOP
                EXECUTE format('ALTER TABLE {table} DROP CONSTRAINT %I', found);
            END LOOP;
        END $$
        """
    )
    op.execute(f"ALTER TABLE {table} ADD CONSTRAINT ck_{table}_{column} CHECK ({column} IN ({allowed}))")


def upgrade() -> None:
    op.execute("ALTER TABLE memories ADD COLUMN invalidated_reason text, ADD COLUMN invalidated_at timestamptz")
    _replace_check("memories", "status", f"{_STATUSES}, 'invalidated'")
    _replace_check("revision_log", "decision", f"{_DECISIONS}, 'INVALIDATE'")


def downgrade() -> None:
    # Invalidated memories leave search either way: archived is the nearest older status.
    op.execute("UPDATE memories SET status = 'archived' WHERE status = 'invalidated'")
    op.execute(
        "UPDATE memory_versions SET status = 'archived', snapshot = jsonb_set(snapshot, '{status}', '\"archived\"') "
        "WHERE status = 'invalidated'"
    )
    op.execute("DELETE FROM revision_log WHERE decision = 'INVALIDATE'")
    _replace_check("revision_log", "decision", _DECISIONS)
    _replace_check("memories", "status", _STATUSES)
    op.execute("ALTER TABLE memories DROP COLUMN invalidated_reason, DROP COLUMN invalidated_at")
