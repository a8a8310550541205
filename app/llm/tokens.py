"""Token counts as OpenAI's BPE tokenizers count them, offline.

tiktoken downloads its BPE files on first use; litellm's wheel (pinned) ships the same files
for its own token counting. They are read from there, checked against the sha256 that tiktoken
itself expects, and never fetched: a missing or altered file is a start-up error, not a
download. The pattern and special tokens are tiktoken's own (tiktoken_ext/openai_public.py).
"""

import base64
import hashlib
from dataclasses import dataclass
from functools import cache
from importlib.util import find_spec
from pathlib import Path

import tiktoken


@dataclass(frozen=True, slots=True)
class _Spec:
    bundled_file: str  # litellm names each file by the sha1 of its download address
    sha256: str
    pattern: str
    special_tokens: dict[str, int]


_SPECS = {
    "cl100k_base": _Spec(
        bundled_file="9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pattern=r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        special_tokens={
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": _Spec(
        bundled_file="fb374d419588a4632f3f557e76b4b70aebbca790",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pattern="|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
}


def _bundled(file_name: str) -> Path:
    # Located without importing litellm: its import does work (a model cost map) not needed here.
    spec = find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("litellm")
    return Path(spec.submodule_search_locations[0]) / "litellm_core_utils" / "tokenizers" / file_name


class TokenizerUnavailable(RuntimeError):
    """The bundled BPE file is missing or not the one expected."""


@cache
def encoding(name: str) -> tiktoken.Encoding:
    """The named encoding, built from the bundled BPE file (read once per process)."""
    spec = _SPECS[name]
    try:
        data = _bundled(spec.bundled_file).read_bytes()
    except (FileNotFoundError, ModuleNotFoundError) as missing:
        raise TokenizerUnavailable(f"the {name} BPE file is not bundled with the installed litellm") from missing
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise TokenizerUnavailable(f"the bundled {name} BPE file does not match its expected sha256")
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}
    return tiktoken.Encoding(name, pat_str=spec.pattern, mergeable_ranks=ranks, special_tokens=spec.special_tokens)


def count(text: str, *, tokenizer: str) -> int:
    """Tokens in `text`; special-token spellings count as the ordinary text they are."""
    return len(encoding(tokenizer).encode_ordinary(text)) if text else 0


def clip(text: str, tokens: int, *, tokenizer: str) -> str:
    """The longest prefix of `text` within `tokens` tokens, cut at a token boundary."""
    encoded = encoding(tokenizer).encode_ordinary(text)
    if len(encoded) <= tokens:
        return text
    return encoding(tokenizer).decode(encoded[: max(tokens, 0)], errors="ignore")
