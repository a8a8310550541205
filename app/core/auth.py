"""API keys scoped to namespace prefixes (SPEC section 7): who may touch which namespaces."""

import hashlib
import hmac
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.core.dependencies import SettingsDep
from app.core.errors import REQUEST_PROBLEMS, AppError, Forbidden, problem_responses

logger = logging.getLogger(__name__)


class Unauthorized(AppError):
    status_code = 401
    type = "/problems/unauthorized"
    title = "Unauthorized"


def in_prefix(namespace: str, prefix: str) -> bool:
    """`user:u1` covers `user:u1` and `user:u1:...` but not `user:u10`; `shared:` covers all it starts."""
    if prefix.endswith(":"):
        return namespace.startswith(prefix)
    return namespace == prefix or namespace.startswith(f"{prefix}:")


EVERYTHING = "*"


@dataclass(frozen=True)
class Access:
    """What the caller may touch; the prefix `*` grants every namespace (an admin key, or no keys at all).
    `principal` names the API key (a fingerprint, never the key), None when keys are off."""

    prefixes: tuple[str, ...]
    principal: str | None = None

    def allows(self, namespace: str) -> bool:
        return EVERYTHING in self.prefixes or any(in_prefix(namespace, prefix) for prefix in self.prefixes)

    def check(self, *namespaces: str | None) -> None:
        """403 unless every namespace is in scope; None stands for "every namespace" (an unfiltered listing)."""
        if EVERYTHING in self.prefixes:
            return
        for namespace in namespaces:
            if namespace is None:
                raise Forbidden(f"this API key is scoped to {list(self.prefixes)}; name a namespace")
            if not self.allows(namespace):
                # Never name the namespace: for an id the caller looked up, it is another tenant's.
                raise Forbidden(f"this API key may not touch that namespace (its scope is {list(self.prefixes)})")


OPEN = Access(prefixes=(EVERYTHING,))


def authenticate(keys: Mapping[str, Sequence[str]], token: str | None) -> Access:
    """The access a bearer token grants. Every key is compared, in constant time, so neither
    timing nor early exit tells how much of a guess was right."""
    if not keys:
        return OPEN
    if not token:
        raise Unauthorized("send the API key as 'Authorization: Bearer <key>'")
    granted: tuple[str, Sequence[str]] | None = None
    for key, prefixes in keys.items():
        if hmac.compare_digest(key.encode(), token.encode()):
            granted = key, prefixes
    if granted is None:
        raise Unauthorized("the API key is not valid")
    key, prefixes = granted
    return Access(prefixes=tuple(prefixes), principal=f"key:{hashlib.sha256(key.encode()).hexdigest()[:16]}")


def warn_if_open(keys: Mapping[str, Sequence[str]]) -> None:
    if not keys:
        logger.warning("no API keys configured (HINDSIGHT_API_KEYS): every namespace is open to every caller")


# What every route behind an API key can answer, besides its own problems.
AUTHENTICATED_PROBLEMS = {**REQUEST_PROBLEMS, **problem_responses(Unauthorized, Forbidden)}

_bearer = HTTPBearer(auto_error=False, description="An API key from HINDSIGHT_API_KEYS.")


async def get_access(
    settings: SettingsDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Access:
    return authenticate(settings.api_keys, credentials.credentials if credentials else None)


AccessDep = Annotated[Access, Depends(get_access)]
