"""The models declare the schema the migrations build, indexes included, and send vectors
exactly."""

import json

import numpy as np
from alembic import command

from app.core.migrations import alembic_config
from app.models import Embedding


def test_autogenerate_against_the_migrated_database_proposes_nothing(database_url):
    # `alembic check`: autogenerate, and fail on any operation it would write (a missing index
    # on the models would come back as a proposal to drop it).
    command.check(alembic_config(database_url))


def test_an_embedding_is_sent_as_text_that_gives_every_float32_back() -> None:
    vector = np.random.default_rng(7).standard_normal(384).astype(np.float32) * np.float32(1e-3)
    sent = Embedding().bind_processor(None)(vector)
    assert np.array_equal(np.array(json.loads(sent), dtype=np.float32), vector)
    assert len(sent) < 16 * 384  # nine digits a number, not a double's seventeen
