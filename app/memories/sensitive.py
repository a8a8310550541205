"""Refuse secrets and personal identifiers before they are stored, in any text field and any
free-form JSON (keys included).

What it finds, and how each finding is confirmed so ordinary text passes:
- vendor tokens (AWS, GitHub, GitLab, Slack, Stripe, JWT, SendGrid, ...): detect-secrets'
  plugins, plus the formats they lack (fine-grained GitHub tokens, current OpenAI and Anthropic
  keys, Google keys, Stripe test and restricted keys), and long random-looking tokens;
- private keys: any PEM or PGP private block header, encrypted ones included;
- labelled secrets ("password: ...", "Passwort lautet ...", "密码是...", "api_key=..."): a
  label from the lexicon, a connector, and a value that looks like a secret rather than words
  ("required", "click the link"); credentials inside connection URLs;
- bank card numbers: Luhn (python-stdnum), an issuer's first digit, card-like grouping, and no
  closer label saying it is an order, invoice or tracking number;
- Chinese resident ids: python-stdnum's check digit, birth date and region.
The vocabulary is data (sensitive_lexicon.json). No pattern nests quantifiers, repeats are
bounded, and a long text is read in pieces, so the work per call is bounded whatever the input.
"""

import asyncio
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector
from pydantic import BaseModel
from stdnum import luhn
from stdnum.cn import ric

from app.core.errors import SensitiveContent
from app.text import CJK_CHARS

_LEXICON = json.loads((Path(__file__).with_name("sensitive_lexicon.json")).read_text(encoding="utf-8"))


def _term(word: str) -> str:
    """A lexicon entry as a pattern: case-insensitive by the caller, a space also matching `_`,
    `-` or nothing (`api key`, `api_key`, `apikey`), and Latin words kept whole."""
    pattern = r"[\s_-]?".join(re.escape(part) for part in word.split(" "))
    if word[:1].isascii() and word[:1].isalnum():
        pattern = r"(?<![A-Za-z0-9])" + pattern
    if word[-1:].isascii() and word[-1:].isalnum():
        pattern += r"(?![A-Za-z])"
    return pattern


def _alternation(words: Iterable[str]) -> str:
    return "|".join(_term(word) for word in sorted(set(words), key=len, reverse=True))


# ------------------------------------------------------------------ tokens and private keys

# detect-secrets' plugins for vendor tokens with a fixed shape (their regexes only: no network
# verification, no settings). Left out: keyword-based ones (our labels cover them, in more
# languages), public IPs (not a secret), and ones whose patterns backtrack on long lines.
# Each with the literal text one of its formats must contain: a text without any skips it.
_PLUGINS: tuple[tuple[RegexBasedDetector, tuple[str, ...]], ...] = (
    (AWSKeyDetector(), ("A3T", "ABIA", "ACCA", "AKIA", "ASIA", "aws", "AWS")),
    (AzureStorageKeyDetector(), ("AccountKey=",)),
    (DiscordBotTokenDetector(), (".",)),
    (GitHubTokenDetector(), ("gh",)),
    (GitLabTokenDetector(), ("gl", "GR1348941")),
    (JwtTokenDetector(), ("eyJ",)),
    (MailchimpDetector(), ("-us",)),
    (OpenAIDetector(), ("T3BlbkFJ",)),
    (PypiTokenDetector(), ("pypi-",)),
    (SendGridDetector(), ("SG.",)),
    (SlackDetector(), ("xox", "hooks.slack.com")),
    (SquareOAuthDetector(), ("sq0csp-",)),
    (StripeDetector(), ("k_live_",)),
    (TelegramBotTokenDetector(), (":",)),
    (TwilioKeyDetector(), ("AC", "SK")),
)
# Literal prefixes first (no look-behind) so the regex engine skips quickly to candidates;
# the boundary before a match is checked after.
_TOKENS = re.compile(
    r"(?:"
    r"github_pat_[A-Za-z0-9_]{30,}"  # GitHub fine-grained tokens
    r"|sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"  # OpenAI, Anthropic
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API keys
    r"|(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}"  # Stripe secret, restricted (and live publishable)
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|hf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|npm_[A-Za-z0-9]{36}"  # npm
    r")"
)
_BEARER = re.compile(r"[Bb]earer\s+([A-Za-z0-9\-._~+/]{16,}=*)|BEARER\s+([A-Za-z0-9\-._~+/]{16,}=*)")
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d")
# A whole run of token characters long enough to be a key (up to a length past which it is
# data, not a key), then judged by its mix and entropy.
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/_=-]{32,}")
_LONG_TOKEN_MAX = 200


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(count / len(text) * math.log2(count / len(text)) for count in counts.values())


def _random_looking(token: str) -> bool:
    """Upper and lower case and digits, spread like random data (a key), unlike hex digests,
    UUIDs, words in CamelCase or paths."""
    core = token.rstrip("=")
    classes = (any(c.isupper() for c in core), any(c.islower() for c in core), sum(c.isdigit() for c in core) >= 3)
    return all(classes) and _entropy(core) >= 4.2


# Every token format above needs a run of this many token characters: text without one
# (most prose) skips the token checks.
_TOKEN_RUN = re.compile(r"[A-Za-z0-9_\-+/=.:]{20,}")


def _has_token(text: str) -> bool:
    if not _TOKEN_RUN.search(text):
        return False
    plugins = (plugin for plugin, markers in _PLUGINS if any(marker in text for marker in markers))
    if any(_starts_word(text, match.start()) for match in _TOKENS.finditer(text)):
        return True
    if any(next(plugin.analyze_string(text), None) for plugin in plugins):
        return True
    for match in _BEARER.finditer(text):
        token = match.group(1) or match.group(2)
        if _starts_word(text, match.start()) and (_random_looking(token) or len(token) >= 32):
            return True
    return any(
        len(match.group()) <= _LONG_TOKEN_MAX and _random_looking(match.group()) for match in _LONG_TOKEN.finditer(text)
    )


def _starts_word(text: str, at: int) -> bool:
    return at == 0 or not (text[at - 1].isascii() and text[at - 1].isalnum())


# ------------------------------------------------------------------ labelled secrets

_NOT_SECRET = frozenset(word.lower() for word in _LEXICON["not_secret_values"])
_PLACEHOLDERS = frozenset(word.lower() for word in _LEXICON["placeholders"])
_CJK = re.compile(rf"[{CJK_CHARS}]")
_QUOTES = "\"'`“”‘’«»„「」『』"
# What a value may not contain: whitespace, quotes, clause punctuation of any script, and CJK
# (a password written in CJK text is Latin letters and digits; the CJK around it is words).
_VALUE = rf"[^\s{_QUOTES},;，。；、()（）\[\]{{}}<>{CJK_CHARS}]{{1,128}}"
_STRONG = _alternation(_LEXICON["strong_connectors"])
_WORDY = _alternation(_LEXICON["word_connectors"])
# "password for the guest wifi is ...": a preposition and up to three words between label and connector.
_QUALIFIER = rf"(?:\s+(?:{_alternation(_LEXICON['qualifier_words'])})(?:\s+[^\s:=：]{{1,40}}){{1,3}}?)?"


def _labelled(labels: list[str]) -> re.Pattern[str]:
    """label, optional qualifier, connector, value; matched only where a label starts."""
    return re.compile(
        rf"(?:{_alternation(labels)}){_QUALIFIER}[{_QUOTES}]?\s{{0,3}}(?:(?P<strong>{_STRONG})|(?P<wordy>{_WORDY})(?:\s{{0,3}}[:：])?)"
        rf"\s{{0,3}}[{_QUOTES}]?(?P<value>{_VALUE})(?P<after>[{_QUOTES}]?[ \t]{{0,3}}\S?)",
        re.IGNORECASE,
    )


_PASSWORD = _labelled(_LEXICON["password_labels"])
_WEAK_PASSWORD = _labelled(_LEXICON["weak_password_labels"])
_PIN = _labelled(_LEXICON["pin_labels"])
_API_KEY = _labelled(_LEXICON["api_key_labels"])
# scheme://user:password@host
_URL_CREDENTIALS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@]{0,128}:([^\s:/@]{1,128})@[^\s@]")

# Where a label may start. Scanning with the patterns above tries every label at every position
# (about 1.6 us a character); instead the text's words are looked up by the labels' first words,
# labels of scripts written without spaces (CJK) are found as substrings, and only there are the
# patterns of the families holding such a label tried.
_FAMILIES = {"password": _PASSWORD, "weak_password": _WEAK_PASSWORD, "pin": _PIN, "api_key": _API_KEY}
_WORD = re.compile(r"[^\W\d_]+")
_BY_FIRST_WORD: dict[str, frozenset[str]] = {}
_BY_UNSPACED: dict[str, frozenset[str]] = {}
for _family in _FAMILIES:
    for _label in _LEXICON[f"{_family}_labels"]:
        _lowered = _label.lower()
        if _CJK.match(_lowered):
            _BY_UNSPACED[_lowered] = _BY_UNSPACED.get(_lowered, frozenset()) | {_family}
        elif _first := _WORD.search(_lowered):
            _BY_FIRST_WORD[_first.group()] = _BY_FIRST_WORD.get(_first.group(), frozenset()) | {_family}
# Per piece of text: label places, and numbers, examined at most (bounds the work on a flood).
_MAX_CANDIDATES = 1_000


def _label_starts(text: str) -> list[tuple[int, frozenset[str]]]:
    """(position, label families) for the places a label may start, in order; at most
    _MAX_CANDIDATES of them (a text made of label words is judged by its first ones)."""
    if len(text) < 3:
        return []
    starts: dict[int, frozenset[str]] = {}
    lowered = text.lower()
    if len(lowered) == len(text):  # lowercasing kept every position (it nearly always does)
        for word in _BY_FIRST_WORD.keys() & set(_WORD.findall(lowered)):
            pattern = re.compile(rf"(?<![^\W\d_]){re.escape(word)}(?![^\W\d_])")
            starts.update((match.start(), _BY_FIRST_WORD[word]) for match in islice(pattern.finditer(lowered), _MAX_CANDIDATES))
    else:
        words = (match for match in _WORD.finditer(text) if match.group().lower() in _BY_FIRST_WORD)
        starts.update((match.start(), _BY_FIRST_WORD[match.group().lower()]) for match in islice(words, _MAX_CANDIDATES))
    if not text.isascii():
        for label, families in _BY_UNSPACED.items():
            at, found = text.find(label), 0
            while at != -1 and found < _MAX_CANDIDATES:
                starts[at] = starts.get(at, frozenset()) | families
                at, found = text.find(label, at + 1), found + 1
    return sorted(starts.items())[:_MAX_CANDIDATES]


def _labelled_matches(text: str, starts: list[tuple[int, frozenset[str]]], family: str) -> Iterator[re.Match[str]]:
    """The family's pattern matched at each place one of its labels starts; the same context
    (a flood of one phrase) is judged once."""
    pattern, seen = _FAMILIES[family], set()
    for at, families in starts:
        context = text[at : at + 256]
        if family in families and context not in seen:
            seen.add(context)
            if match := pattern.match(text, at):
                yield match


def _clean(value: str) -> str:
    return value.rstrip(".:!?。！？").strip(_QUOTES)


def _shaped(value: str) -> bool:
    """Looks made up rather than a word: a digit, a symbol, or a capital inside it."""
    return any(c.isdigit() for c in value) or any(not c.isalnum() for c in value) or any(c.isupper() for c in value[1:])


def _plausible(match: re.Match[str], *, need_shape: bool, min_length: int = 4) -> bool:
    """Is the value after a label a secret, or words about one?"""
    value = _clean(match.group("value"))
    lowered = value.lower()
    if len(value) < min_length or lowered in _NOT_SECRET or lowered in _PLACEHOLDERS or _CJK.search(value):
        return False
    if set(value) <= set("*•xX.#-_?") or value[0] in "<$%{[":  # masked, or a template: ****, <password>, ${PASS}
        return False
    if _shaped(value):
        return True
    if need_shape:
        return False
    # A bare lowercase word is the secret only where the clause ends with it; "is required to
    # log in" and "click the link" run on into more words.
    runs_on = match.group("after").strip(_QUOTES + " \t")[:1]
    return not (runs_on.isalpha() and value.islower())


def _has_password(text: str, starts: list[tuple[int, frozenset[str]]]) -> bool:
    if any(_plausible(match, need_shape=False) for match in _labelled_matches(text, starts, "password")):
        return True
    if any(
        match.group("strong") and _plausible(match, need_shape=True)
        for match in _labelled_matches(text, starts, "weak_password")
    ):
        return True
    if any(re.fullmatch(r"\d{4,12}", _clean(match.group("value"))) for match in _labelled_matches(text, starts, "pin")):
        return True
    return "://" in text and "@" in text and any(
        match.group(1).lower() not in _PLACEHOLDERS and match.group(1)[0] not in "<$%{*"
        for match in _URL_CREDENTIALS.finditer(text)
    )


def _has_labelled_key(text: str, starts: list[tuple[int, frozenset[str]]]) -> bool:
    for match in _labelled_matches(text, starts, "api_key"):
        value = _clean(match.group("value"))
        if len(value) >= 12 and _plausible(match, need_shape=True) and sum(c.isalnum() for c in value) >= 12:
            return True
    return False


# ------------------------------------------------------------------ numbers

# 13 to 19 digits, alone or grouped by one kind of separator (space, dot or dash).
_CARD_CANDIDATE = re.compile(r"(?<![\d+.,])\d{4,6}(?:([ .-])\d{4,6}(?:\1\d{1,6}){1,3}|\d{9,15})(?!\d|[.,]\d)")
_CARD_GROUPINGS = ((4, 4, 4, 4), (4, 4, 4, 4, 3), (4, 6, 5), (4, 6, 4), (4, 4, 4, 1))
_CARD_CONTEXT_CHARS = 40
_CARD_LABELS = frozenset(re.sub(r"[\s_-]", "", word.lower()) for word in _LEXICON["card_labels"])
_CARD_CONTEXT = re.compile(_alternation([*_LEXICON["card_labels"], *_LEXICON["not_card_labels"]]), re.IGNORECASE)
_CN_ID_CANDIDATE = re.compile(r"(?<!\d)\d{17}[\dXx](?!\d)")
# A UUID's digit groups can look like a grouped card number (about one random UUID in 10,000).
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def _card_grouped(candidate: str, separator: str | None) -> bool:
    if separator is None:
        return True
    return tuple(len(group) for group in candidate.split(separator)) in _CARD_GROUPINGS


def _labelled_as_card(text: str, start: int) -> bool:
    """The nearest label before the number decides; with none, a valid number is taken as a card."""
    window = text[max(0, start - _CARD_CONTEXT_CHARS) : start]
    labels = list(_CARD_CONTEXT.finditer(window))
    if not labels:
        return True
    return re.sub(r"[\s_-]", "", labels[-1].group().lower()) in _CARD_LABELS


def _has_bank_card(text: str) -> bool:
    text = _UUID.sub(lambda uuid: "#" * len(uuid.group()), text)
    for match in islice(_CARD_CANDIDATE.finditer(text), _MAX_CANDIDATES):
        digits = re.sub(r"\D", "", match.group())
        if not (13 <= len(digits) <= 19) or digits[0] not in _LEXICON["card_issuer_first_digits"] or len(set(digits)) < 2:
            continue
        if _card_grouped(match.group(), match.group(1)) and luhn.is_valid(digits) and _labelled_as_card(text, match.start()):
            return True
    return False


def _has_cn_resident_id(text: str) -> bool:
    return any(ric.is_valid(match.group().upper()) for match in islice(_CN_ID_CANDIDATE.finditer(text), _MAX_CANDIDATES))


# ------------------------------------------------------------------ the guard

_FOUR_DIGITS = re.compile(r"\d{4}")
# Long texts are read in overlapping pieces, so no single regex call runs long (a guard running
# in a thread then lets the event loop in between), and nothing shorter than the overlap that
# straddles two pieces is missed.
_PIECE_CHARS = 65_536
_OVERLAP_CHARS = 4_096


def _pieces(text: str) -> Iterator[str]:
    """Overlapping pieces of a long text, cut at whitespace where there is some nearby, so no
    word or number is cut in two and read as another."""
    start = 0
    while True:
        end = min(start + _PIECE_CHARS, len(text))
        if end < len(text):
            cut = max(text.rfind(" ", end - 256, end), text.rfind("\n", end - 256, end))
            end = cut if cut > start else end
        yield text[start:end]
        if end >= len(text):
            return
        restart = end - _OVERLAP_CHARS
        space = max(text.find(" ", restart, restart + 256), text.find("\n", restart, restart + 256))
        start = space if space > start else restart


def find_sensitive(text: str) -> str | None:
    """The kind of sensitive data in the text, or None."""
    if len(text) <= _PIECE_CHARS:
        return _find(text)
    return next((kind for piece in _pieces(text) if (kind := _find(piece))), None)


def _find(text: str) -> str | None:
    """Cheap checks first: most text has no run of digits, no label word and no long token,
    and leaves after a few microseconds."""
    if ("PRIVATE KEY" in text or "PuTTY-User-Key" in text) and _PRIVATE_KEY.search(text):
        return "private_key"
    if _FOUR_DIGITS.search(text):
        if _has_cn_resident_id(text):
            return "cn_resident_id"
        if _has_bank_card(text):
            return "bank_card"
    starts = _label_starts(text)
    if (starts or "://" in text) and _has_password(text, starts):
        return "password"
    if (starts and _has_labelled_key(text, starts)) or _has_token(text):
        return "api_key"
    return None


def _texts(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(where, text) for every text a JSON value holds. An object's entries are read as
    "key: value", so {"password": "hunter2"} reads like the sentence it is."""
    pending: list[tuple[str, Any]] = [(path, value)]
    while pending:
        where, item = pending.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, dict):
            for key, inner in item.items():
                inner_path = f"{where}.{key}" if where else str(key)
                if isinstance(inner, (str, int, float)) and not isinstance(inner, bool):
                    yield inner_path, f"{key}: {inner}"
                else:
                    yield inner_path, str(key)
                    pending.append((inner_path, inner))
        elif isinstance(item, list):
            pending.extend((f"{where}.{index}" if where else str(index), inner) for index, inner in enumerate(item))


def _plain(value: Any) -> Any:
    return value.model_dump(mode="json", exclude_none=True) if isinstance(value, BaseModel) else value


def sensitive_in(value: Any) -> tuple[str, str] | None:
    """(kind, where) of the first sensitive text in a string, JSON value or request model."""
    for where, text in _texts(_plain(value)):
        if kind := find_sensitive(text):
            return kind, where
    return None


def refuse_sensitive(*values: Any, what: str = "the memory") -> None:
    """Raise SensitiveContent naming the kind of sensitive data found, and where."""
    for value in values:
        if value is None:
            continue
        found = sensitive_in(value)
        if found is not None:
            kind, where = found
            place = f" in `{where}`" if where else ""
            raise SensitiveContent(f"{what} contains sensitive data ({kind}){place}; it was not stored")


async def refuse_sensitive_off_loop(value: Any, *, what: str) -> None:
    """refuse_sensitive for a value that may be large (a task's events): past one piece of text
    it is read in a worker thread, piece by piece, so the event loop runs in between."""
    value = _plain(value)
    if sum(len(text) for _, text in _texts(value)) <= _PIECE_CHARS:
        refuse_sensitive(value, what=what)
    else:
        await asyncio.to_thread(refuse_sensitive, value, what=what)
