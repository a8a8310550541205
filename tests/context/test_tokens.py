"""Token counts come from the BPE files bundled in the installed wheels, never from a download."""

import pytest

from app.llm import tokens


@pytest.fixture
def fresh_encodings():
    tokens.encoding.cache_clear()
    yield
    tokens.encoding.cache_clear()


def test_counts_match_openai_tokenizers_without_any_cache_or_network(fresh_encodings, monkeypatch, tmp_path):
    # tiktoken would download into (and read from) this directory; it stays empty.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr("tiktoken.load.read_file", lambda *_: pytest.fail("tried to fetch a BPE file"))
    assert tokens.count("hello world", tokenizer="cl100k_base") == 2
    assert tokens.count("hello world", tokenizer="o200k_base") == 2
    assert tokens.count("用户对花生过敏", tokenizer="cl100k_base") > tokens.count(
        "用户对花生过敏", tokenizer="o200k_base"
    )
    assert tokens.count("<|endoftext|>", tokenizer="cl100k_base") > 1  # special tokens count as the text they are
    assert tokens.count("", tokenizer="cl100k_base") == 0
    assert list(tmp_path.iterdir()) == []


def test_clip_cuts_at_a_token_boundary():
    text = "The quick brown fox jumps over the lazy dog."
    assert tokens.clip(text, 3, tokenizer="cl100k_base") == "The quick brown"
    assert tokens.clip(text, 100, tokenizer="cl100k_base") == text


def test_an_altered_bpe_file_is_refused(fresh_encodings, monkeypatch, tmp_path):
    forged = tmp_path / "forged"
    forged.write_bytes(b"aGVsbG8= 0\n")
    monkeypatch.setattr(tokens, "_bundled", lambda _: forged)
    with pytest.raises(tokens.TokenizerUnavailable, match="sha256"):
        tokens.count("hello", tokenizer="cl100k_base")
