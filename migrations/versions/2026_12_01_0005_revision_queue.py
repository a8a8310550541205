"""The revision queue: procrastinate's tables, functions and triggers.

With HINDSIGHT_REVISION_MODE=async, a write stores the memory and defers its revision to
a worker through this Postgres-backed queue, so writes stay fast and no extra service is
needed. The SQL is procrastinate 3.10.0's own schema, frozen beside this file so the
migration means the same thing whatever version is installed later (a procrastinate
upgrade brings its own migration). It holds many statements and dollar-quoted bodies, so
it runs through the driver's simple-query protocol.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from collections.abc import Sequence
from pathlib import Path

from alembic import op
from sqlalchemy.util import await_only

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: Sequence[str] | None = None
depends_on: Sequence[str] | None = None


def _run_script(sql: str) -> None:
    driver_connection = op.get_bind().connection.dbapi_connection.driver_connection
    await_only(driver_connection.execute(sql))


SCHEMA = Path(__file__).resolve().parents[1] / "sql" / "procrastinate-3.10.0-schema.sql"


def upgrade() -> None:
    _run_script(SCHEMA.read_text(encoding="utf-8"))


def downgrade() -> None:
    _run_script(
        """
        DROP TABLE IF EXISTS procrastinate_events, procrastinate_periodic_defers, procrastinate_workers,
            procrastinate_jobs CASCADE;
        DROP TYPE IF EXISTS procrastinate_job_status, procrastinate_job_event_type CASCADE;
        """
    )
