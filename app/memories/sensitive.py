"""Refuse secrets and personal identifiers before they are stored.

Each detector confirms a candidate with a checksum or a labelled context, so ordinary
numbers (phone numbers, order ids, dates) pass.
"""

import re
from collections.abc import Callable

from app.core.errors import SensitiveContent

_CARD_CANDIDATE = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_CN_ID_CANDIDATE = re.compile(r"(?<![0-9A-Za-z])(\d{17}[\dXx])(?![0-9A-Za-z])")
_CN_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_ID_CHECK = "10X98765432"
_PASSWORD = re.compile(
    r"(?:\b(?:password|passwd|pwd|passcode|secret)\b\s*(?:is|[:=：])\s*\S+)"
    r"|(?:(?:密码|口令)\s*(?:是|为|[:=：])\s*\S+)",
    re.IGNORECASE,
)
_API_KEY = re.compile(
    r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"  # OpenAI / Anthropic style
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key id
    r"|\bgh[pousr]_[A-Za-z0-9]{36,}\b"  # GitHub tokens
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"  # Slack tokens
    r"|\bAIza[0-9A-Za-z_-]{35}\b"  # Google API keys
    r"|-----BEGIN (?:RSA |EC |OPENSSH |DSA )?PRIVATE KEY-----"
)


def _luhn_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _has_bank_card(text: str) -> bool:
    for match in _CARD_CANDIDATE.finditer(text):
        digits = re.sub(r"[ -]", "", match.group())
        if 13 <= len(digits) <= 19 and len(set(digits)) > 1 and _luhn_valid(digits):
            return True
    return False


def _cn_id_valid(candidate: str) -> bool:
    body, check = candidate[:17], candidate[17].upper()
    month, day = int(candidate[10:12]), int(candidate[12:14])
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return False
    total = sum(int(digit) * weight for digit, weight in zip(body, _CN_ID_WEIGHTS, strict=True))
    return _CN_ID_CHECK[total % 11] == check


def _has_cn_resident_id(text: str) -> bool:
    return any(_cn_id_valid(match.group(1)) for match in _CN_ID_CANDIDATE.finditer(text))


_DETECTORS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("cn_resident_id", _has_cn_resident_id),
    ("bank_card", _has_bank_card),
    ("password", lambda text: _PASSWORD.search(text) is not None),
    ("api_key", lambda text: _API_KEY.search(text) is not None),
)


def refuse_sensitive(*texts: str | None) -> None:
    """Raise SensitiveContent naming the first kind of sensitive data found."""
    for text in texts:
        kind = find_sensitive(text or "")
        if kind is not None:
            raise SensitiveContent(f"the memory contains sensitive data ({kind}); it was not stored")


def find_sensitive(text: str) -> str | None:
    """The kind of sensitive data found in text, or None."""
    for kind, detect in _DETECTORS:
        if detect(text):
            return kind
    return None
