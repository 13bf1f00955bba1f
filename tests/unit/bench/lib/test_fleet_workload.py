"""bench.fleet's one-application schedule: one system prompt, turns that extend the last."""

import itertools

from bench.lib.fleet_workload import one_application


def _text(arrival) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in arrival.body["messages"]]


def test_every_conversation_sends_its_turns_gap_apart_each_extending_the_last():
    schedule = one_application(rate=2.0, duration=5.0, turns=3, gap=1.5, rules=2, sentences=2)
    assert [a.at for a in schedule] == sorted(a.at for a in schedule)
    by_conv: dict[int, list] = {}
    for a in schedule:
        by_conv.setdefault(a.tenant, []).append(a)
    assert len(by_conv) >= 2
    for turns in by_conv.values():
        assert len(turns) == 3
        assert [round(b.at - a.at, 6) for a, b in itertools.pairwise(turns)] == [1.5, 1.5]
        for before, after in itertools.pairwise(turns):
            prev, nxt = _text(before), _text(after)
            assert nxt[: len(prev)] == prev  # the last prompt is this one's prefix
            assert nxt[len(prev)][0] == "assistant" and nxt[-1][0] == "user"
    systems = {a.body["messages"][0]["content"] for a in schedule}
    assert len(systems) == 1  # one application: one system prompt
    assert all(a.body["messages"][0]["role"] == "system" for a in schedule)


def test_conversations_start_only_within_the_duration_and_the_seed_fixes_the_schedule():
    a = one_application(rate=4.0, duration=3.0, turns=2, gap=2.0, rules=1, sentences=1)
    b = one_application(rate=4.0, duration=3.0, turns=2, gap=2.0, rules=1, sentences=1)
    c = one_application(rate=4.0, duration=3.0, turns=2, gap=2.0, rules=1, sentences=1, seed=1)
    assert [(x.at, x.body) for x in a] == [(x.at, x.body) for x in b]
    assert [x.at for x in a] != [x.at for x in c]
    firsts = [x for x in a if len(x.body["messages"]) == 2]
    assert firsts and all(x.at < 3.0 for x in firsts)
    assert max(x.at for x in a) < 3.0 + 2.0
