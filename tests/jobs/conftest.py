from tests.conversations.conftest import committing, tag  # noqa: F401  (shared fixtures)
