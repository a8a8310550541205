from tests.revisions.conftest import scripted_llm  # noqa: F401  (the LLM path, scripted)
