"""bench/lib/routes_report.py: per-route ratios from per-case rows, retention beside
chat's, and the headline keys."""

from __future__ import annotations

from bench.lib.routes_report import headline, summarize


def row(direct_ms, ragtrim_ms, direct_tokens, ragtrim_tokens, retained, decision="compress:auto"):
    return {
        "case_id": "c",
        "direct_ttft_ms": direct_ms,
        "ragtrim_ttft_ms": ragtrim_ms,
        "ttft_ratio": round(ragtrim_ms / direct_ms, 3),
        "direct_prompt_tokens": direct_tokens,
        "ragtrim_prompt_tokens": ragtrim_tokens,
        "decision": decision,
        "compress_ms": 5.0 if decision.startswith("compress") else None,
        "compressed": decision.startswith("compress"),
        "readback_hit": decision.startswith("compress"),
        "gold_retained": retained,
        "answer_direct": False,
        "answer_ragtrim": retained,
    }


def case(bucket, chat, responses, messages):
    return {"context_tokens": bucket, "chat": chat, "responses": responses, "messages": messages}


def test_summarize_takes_medians_of_per_case_ratios():
    rows = [row(1000, 400, 1000, 500, True), row(2000, 1000, 2000, 600, False),
            row(3000, 600, 3000, 1500, True, "skip:limits")]  # fmt: skip
    got = summarize(rows)
    assert got["ttft_ratio_p50"] == 0.4  # 0.4, 0.5, 0.2
    assert got["prompt_tokens_ratio_p50"] == 0.5  # 0.5, 0.3, 0.5
    assert got["gold_retention"] == round(2 / 3, 3)
    assert (got["compressed"], got["readback_hits"]) == (2, 2)
    assert got["decisions"] == ["compress:auto", "skip:limits"]
    assert (got["direct_prompt_tokens"], got["ragtrim_prompt_tokens"]) == (6000, 2600)


def test_headline_sets_each_route_beside_chat():
    cases = [
        case([450, 650], row(1000, 400, 700, 350, True), row(1000, 500, 700, 350, True),
             row(1000, 450, 700, 350, False)),
        case([950, 1250], row(2000, 800, 1300, 600, True), row(2000, 900, 1300, 600, True),
             row(2000, 800, 1300, 600, True)),
    ]  # fmt: skip
    got = headline(cases, 0.33)
    assert got["chat_vs_direct_ttft_p50"] == 0.4
    assert got["responses_vs_direct_ttft_p50"] == 0.475
    assert got["messages_vs_direct_ttft_p50"] == 0.425
    assert got["chat_vs_direct_prompt_tokens"] == round((0.5 + 600 / 1300) / 2, 3)
    assert (got["chat_retention"], got["messages_retention"]) == (1.0, 0.5)
    assert got["retention_gap_max"] == 0.5
    assert got["ttft_ratio_gap_max"] == 0.075
    assert got["worst_route_vs_direct_ttft_p50"] == 0.475
    assert got["same_direct_prompt_tokens"] is True
    assert got["ttft_ratio_by_bucket"]["responses"] == {"450-650": 0.5, "950-1250": 0.45}


def test_a_route_whose_direct_prompt_differs_is_flagged():
    cases = [case([1, 2], row(1, 1, 700, 350, True), row(1, 1, 701, 350, True),
                  row(1, 1, 700, 350, True))]  # fmt: skip
    assert headline(cases, 0.33)["same_direct_prompt_tokens"] is False
