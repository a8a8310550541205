from typing import Annotated

from fastapi import Depends, Request

from app.revisions.service import Context


def get_revision_context(request: Request) -> Context:
    state = request.app.state
    return Context(judge=state.judge, embedder=state.embedder, settings=state.settings)


RevisionContextDep = Annotated[Context, Depends(get_revision_context)]
