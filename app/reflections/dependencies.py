from typing import Annotated

from fastapi import Depends, Request

from app.core.dependencies import SettingsDep
from app.reflections.reviewers import Reviewer, build_reviewer


def get_reviewer(request: Request, settings: SettingsDep) -> Reviewer:
    return build_reviewer(settings, request.app.state.schema_checker)


ReviewerDep = Annotated[Reviewer, Depends(get_reviewer)]
