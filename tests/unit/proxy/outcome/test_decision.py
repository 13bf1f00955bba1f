"""The typed decision (proxy/outcome/decision.py) and the header value it renders: the
same strings clients and benchmarks read before the decision was typed."""

from proxy.outcome.decision import Action, Decision, Figures, Why, compress, failed_open, skip


def test_the_gate_s_figures_render_in_their_order_and_only_when_present():
    d = skip(Why.NOT_WORTH_IT, saved_ms=3.4, cost_ms=9.6, held=120, fixed_ms=2.2,
             queued=1.26, wait_ms=40)  # fmt: skip
    assert (
        d.reason == "skip:not-worth-it(saved=3ms,cost=10ms,held=120,fixed=2ms,queued=1.3,wait=40ms)"
    )
    assert compress(Why.AUTO, 0.5, saved_ms=30, cost_ms=2, held=0, fixed_ms=0.0, queued=0,
                    wait_ms=None).reason == "compress:auto(saved=30ms,cost=2ms)"  # fmt: skip
    assert d.for_cost and not d.compresses and d.rate is None


def test_stable_and_short_forms():
    figures = Figures(uncached=412.4, form=40.0, asked=True)
    assert Decision(Action.COMPRESS, Why.STABLE, None, figures).reason == (
        "compress:stable(uncached=412,form=40,asked)"
    )
    grown = Decision(Action.COMPRESS, Why.STABLE_GROWN, 0.5, Figures(uncached=9, form=3), 2)
    assert grown.reason == "compress:stable-grown(+2)(uncached=9,form=3)"
    assert skip(Why.SHORT_CONTEXT, context_tokens=120).reason == "skip:short-context(120)"
    assert skip(Why.OPAQUE).reason == "skip:opaque"
    assert failed_open(Why.BUSY).reason == "failed-open:busy"
    assert not failed_open(Why.BUSY).for_cost
