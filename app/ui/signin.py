"""Who is looking at the viewer: a signed, HttpOnly, SameSite=Strict cookie holding the API key's
fingerprint (never the key) and the CSRF token every form carries back.

With no API keys configured (open mode) the cookie only carries the CSRF token. A key taken out
of HINDSIGHT_API_KEYS ends its sign-ins at their next request: the fingerprint no longer matches."""

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from itsdangerous import BadSignature, URLSafeTimedSerializer

from app.core.auth import Access, OPEN, Unauthorized, authenticate
from app.core.settings import Settings

COOKIE = "hindsight_ui"


@dataclass(frozen=True)
class Viewer:
    access: Access
    csrf: str
    open_mode: bool


def _serializer(request: Request) -> URLSafeTimedSerializer:
    settings: Settings = request.app.state.settings
    secret = settings.ui_secret.get_secret_value() if settings.ui_secret else None
    if secret is None:
        # One random secret per process: sign-ins last until a restart (set HINDSIGHT_UI_SECRET to share).
        secret = getattr(request.app.state, "ui_secret", None) or secrets.token_urlsafe(32)
        request.app.state.ui_secret = secret
    return URLSafeTimedSerializer(secret, salt="hindsight-ui")


def _read(request: Request) -> dict[str, Any] | None:
    raw = request.cookies.get(COOKIE)
    if not raw or len(raw) > 1_000:
        return None
    settings: Settings = request.app.state.settings
    try:
        value = _serializer(request).loads(raw, max_age=settings.ui_session_seconds)
    except BadSignature:  # expired ones too (SignatureExpired is a BadSignature)
        return None
    return value if isinstance(value, dict) and isinstance(value.get("c"), str) else None


def _fingerprint(key: str) -> str:
    return f"key:{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def current(request: Request) -> Viewer | None:
    """The signed-in viewer; None when a key is needed and none is signed in."""
    settings: Settings = request.app.state.settings
    cookie = _read(request)
    csrf = cookie["c"] if cookie else ""
    if not settings.api_keys:
        return Viewer(access=OPEN, csrf=csrf, open_mode=True)
    principal = cookie.get("p") if cookie else None
    if not isinstance(principal, str):
        return None
    for key, prefixes in settings.api_keys.items():
        if hmac.compare_digest(_fingerprint(key), principal):
            return Viewer(access=Access(prefixes=tuple(prefixes), principal=principal), csrf=csrf, open_mode=False)
    return None


def csrf_token(request: Request) -> str:
    """The token forms carry: the cookie's, or a new one (set by `issue` on the response)."""
    cookie = _read(request)
    return cookie["c"] if cookie else ""


def new_token() -> str:
    return secrets.token_urlsafe(24)


def issue(request: Request, response: Response, *, principal: str | None, csrf: str | None = None) -> str:
    """Set the cookie (a fresh CSRF token unless one is given); returns the token."""
    settings: Settings = request.app.state.settings
    token = csrf or new_token()
    value: dict[str, Any] = {"c": token}
    if principal is not None:
        value["p"] = principal
    response.set_cookie(
        COOKIE,
        _serializer(request).dumps(value),
        max_age=settings.ui_session_seconds,
        httponly=True,
        samesite="strict",
        secure=settings.ui_cookie_secure,
        path="/ui",
    )
    return token


def sign_in(request: Request, key: str) -> str | None:
    """The fingerprint of a valid key; None otherwise (compared in constant time)."""
    settings: Settings = request.app.state.settings
    try:
        access = authenticate(settings.api_keys, key)
    except Unauthorized:
        return None
    return access.principal


def csrf_ok(request: Request, sent: str | None) -> bool:
    expected = csrf_token(request)
    return bool(expected) and isinstance(sent, str) and hmac.compare_digest(expected.encode(), sent.encode())


def sign_out(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/ui")
