"""`make bench` finds its data at ../shared/bench from the repository root in any folder layout,
takes --data, and says what it missed."""

from pathlib import Path

import pytest

from app.bench.__main__ import NEEDS, _parse


def lay_out(bench: Path) -> None:
    for paths in NEEDS.values():
        for path in paths:
            (bench / path).parent.mkdir(parents=True, exist_ok=True)
            (bench / path).write_text("{}")


def test_the_data_beside_the_checkout_is_found_wherever_the_checkout_is(tmp_path, monkeypatch):
    checkout = tmp_path / "projects" / "hindsight"
    checkout.mkdir(parents=True)
    lay_out(tmp_path / "projects" / "shared" / "bench")
    monkeypatch.chdir(checkout)  # make runs from the repository root
    args = _parse([])
    assert args.locomo == tmp_path / "projects" / "shared" / "bench" / NEEDS["locomo"][0]
    assert args.updates and all(path.is_file() for path in args.updates)


def test_data_is_taken_from_the_path_given(tmp_path):
    lay_out(tmp_path / "elsewhere")
    given = tmp_path / "elsewhere"
    assert _parse(["--data", str(given)]).updates == [given / path for path in NEEDS["updates"]]


def test_missing_data_is_named_with_the_way_to_give_it(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        _parse(["--data", str(tmp_path / "nothing-here")])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert f"bench data not found: {tmp_path / 'nothing-here' / NEEDS['locomo'][0]}" in error and "--data DIR" in error
    assert _parse(["--data", str(tmp_path / "nothing-here"), "--suites", "latency"]).suites == "latency"
