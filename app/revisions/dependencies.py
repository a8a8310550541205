from functools import partial
from typing import Annotated

from fastapi import Depends, Request

from app.revisions.queue import defer
from app.revisions.service import Context


def get_revision_context(request: Request) -> Context:
    state = request.app.state
    queue = getattr(state, "revision_queue", None)
    return Context(
        judge=state.judge,
        embedder=state.embedder,
        settings=state.settings,
        defer=partial(defer, queue) if queue is not None else None,
    )


RevisionContextDep = Annotated[Context, Depends(get_revision_context)]
