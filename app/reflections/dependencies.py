from typing import Annotated

from fastapi import Depends

from app.core.dependencies import SettingsDep
from app.reflections.reviewers import Reviewer, build_reviewer


def get_reviewer(settings: SettingsDep) -> Reviewer:
    return build_reviewer(settings)


ReviewerDep = Annotated[Reviewer, Depends(get_reviewer)]
