"""Key terms: the key-prefix route also reaches keys whose segments a query names.

A query about a phone number should reach `user:u1:phone` without the caller knowing
the key. `hindsight_key_terms` splits the part of a key after its namespace into
lower-case segments (`phone_number` -> {phone, number}); a GIN index over it answers
`&&` (overlap) with the query's words. The namespace part is left out so a word like
"user" does not match every key of `user:*`. The function is IMMUTABLE so it can be
indexed, and the route must call the same function for the index to apply.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: Sequence[str] | None = None
depends_on: Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        r"""
        CREATE FUNCTION hindsight_key_terms(namespace text, key text) RETURNS text[]
        LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURNS NULL ON NULL INPUT
        RETURN regexp_split_to_array(lower(substr(key, length(namespace) + 2)), '[_.\-:]+')
        """
    )
    op.execute(
        "CREATE INDEX ix_memories_key_terms ON memories USING gin (hindsight_key_terms(namespace, key)) "
        "WHERE key IS NOT NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX ix_memories_key_terms")
    op.execute("DROP FUNCTION hindsight_key_terms(text, text)")
