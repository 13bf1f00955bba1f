"""deploy/local/publish.py: a model folder appears at `out` whole or not at all."""

from __future__ import annotations

import pytest

from deploy.local.publish import building


def test_a_finished_build_replaces_out_readable_to_all(tmp_path):
    out = tmp_path / "models" / "m"
    out.mkdir(parents=True)
    (out / "old.json").write_text("old")
    with building(out) as tmp:
        assert tmp.parent == out.parent and tmp != out
        (tmp / "config.json").write_text("{}")
    assert sorted(p.name for p in out.iterdir()) == ["config.json"]
    assert out.stat().st_mode & 0o777 == 0o755
    assert (out / "config.json").stat().st_mode & 0o777 == 0o644
    assert [p.name for p in out.parent.iterdir()] == ["m"]  # no temporary folder left


def test_a_failed_build_leaves_out_as_it_was_and_nothing_else(tmp_path):
    out = tmp_path / "m"
    out.mkdir()
    (out / "old.json").write_text("old")
    with pytest.raises(RuntimeError), building(out) as tmp:
        (tmp / "config.json").write_text("{}")
        raise RuntimeError("the build failed")
    assert [p.name for p in out.iterdir()] == ["old.json"]
    assert [p.name for p in tmp_path.iterdir()] == ["m"]
