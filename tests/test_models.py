"""The models declare the schema the migrations build, indexes included."""

from alembic import command

from app.core.migrations import alembic_config


def test_autogenerate_against_the_migrated_database_proposes_nothing(database_url):
    # `alembic check`: autogenerate, and fail on any operation it would write (a missing index
    # on the models would come back as a proposal to drop it).
    command.check(alembic_config(database_url))
