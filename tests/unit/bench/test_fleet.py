"""bench.fleet's regimes: every default run can give its regime's keys."""

from bench.fleet import REGIMES, parse_args, regimes_of
from bench.lib.fleet_report import FIGURES, RATIO_SIZE, RATIOS
from bench.lib.fleet_run import MODES


def test_each_regime_runs_the_modes_and_size_its_keys_compare():
    assert set(REGIMES) == set(RATIOS) == set(RATIO_SIZE)
    for name, regime in REGIMES.items():
        modes = regime.modes.split(",")
        assert set(modes) <= set(MODES)
        needed = {m for r in RATIOS[name] for m in r[:2]} | {f[0] for f in FIGURES.get(name, ())}
        assert needed <= set(modes), name
        assert str(RATIO_SIZE[name]) in regime.sizes.split(",")


def test_the_command_line_overrides_only_what_it_gives():
    args = parse_args(["--regimes", "rag,one_application", "--duration", "3", "--modes", "kv"])
    got = regimes_of(args)
    assert list(got) == ["rag", "one_application"]
    assert got["rag"].duration == 3.0 and got["rag"].modes == "kv"
    assert got["rag"].preset == REGIMES["rag"].preset
    assert got["one_application"].cache_blocks == REGIMES["one_application"].cache_blocks
