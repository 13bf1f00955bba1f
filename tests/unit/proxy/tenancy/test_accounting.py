"""Accounting's pieces (proxy/tenancy/accounting.py): periods and keys, bounded labels, what
one request adds, costs; the access log's line (proxy/telemetry/accesslog.py)."""

from datetime import UTC, datetime

from cache.store import MemoryStore
from proxy.context import RequestContext
from proxy.metrics import Metrics
from proxy.outcome.decision import Why, skip
from proxy.outcome.request import Answer, Compression, RequestOutcome, Usage
from proxy.settings import AccountingSettings, TenancySettings
from proxy.telemetry.accesslog import line_of
from proxy.telemetry.record import RequestRecord
from proxy.tenancy.accounting import Accounting, known_tenants, periods, tenant_label
from proxy.tenancy.ledger import entry_of

TENANCY = TenancySettings(api_keys={"k1": "acme", "k2": "globex"}, salt_secret="x" * 20)


def test_periods_are_utc_day_and_month_with_their_ttls():
    now = datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()
    got = periods(now)
    assert got["today"][0] == "day:2026-12-31" and got["month"][0] == "month:2026-12"
    assert got["today"][1] < got["month"][1]
    assert periods(now + 1)["month"][0] == "month:2027-01"


def test_an_accountings_periods_turn_at_midnight_utc_and_are_formatted_once_a_day():
    times = [datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()]
    clock = lambda: times[0]  # noqa: E731
    acc = Accounting(MemoryStore(), AccountingSettings(), TENANCY, Metrics(), clock=clock)
    first = acc.periods()
    assert first == periods(times[0]) and acc.periods() is first  # formatted once
    times[0] += 1
    assert acc.periods()["today"][0] == "day:2027-01-01" == periods(times[0])["today"][0]
    assert acc.periods()["month"][0] == "month:2027-01"


def test_labels_are_bounded_to_configured_tenants():
    known = known_tenants(TENANCY)
    assert known == {"acme", "globex"}
    assert [tenant_label(t, known) for t in ("acme", "mallory", "")] == ["acme", "other", "other"]
    assert tenant_label("", known_tenants(TenancySettings())) == "default"


def outcome(before=0, after=0, prompt=0, cached=0, completion=0) -> RequestOutcome:
    squeezed = Compression("c", before, after) if before else None
    usage = Usage(prompt, cached, completion, True) if prompt else None
    return RequestOutcome(compression=squeezed, answer=Answer("http://b:1", usage))


def test_one_requests_entry_from_its_typed_outcome():
    """Sent = cached + computed, and the client's prompt = sent + what compression cut."""
    got = entry_of(outcome(800, 300, prompt=450, cached=128, completion=20))
    assert got == {"requests": 1, "client_tokens": 950, "prompt_tokens": 450,
                   "tokens_before": 800, "tokens_after": 300, "tokens_removed": 500,
                   "cached_tokens": 128, "computed_tokens": 322,
                   "completion_tokens": 20}  # fmt: skip
    nothing = entry_of(RequestOutcome())  # not compressed, no usage: only the request counts
    assert nothing["requests"] == 1 and sum(nothing.values()) == 1
    assert entry_of(RequestOutcome(), requests=3)["requests"] == 3  # a batch's conversations


async def test_totals_and_costs_per_period_and_model():
    now = datetime(2026, 12, 1, 12, tzinfo=UTC).timestamp()
    acc = Accounting(MemoryStore(), AccountingSettings(price_per_1k_prompt_tokens=2.0),
                     TENANCY, Metrics(), clock=lambda: now)  # fmt: skip
    await acc.record("acme", entry_of(outcome(1000, 400, prompt=500, cached=100)), "m1")
    await acc.record("acme", entry_of(outcome(1000, 400, prompt=500, completion=7)), "org/m:2")
    today = (await acc.totals("acme"))["today"]
    assert today["requests"] == 2 and today["tokens_removed"] == 1200
    assert today["computed_tokens"] == 900 and today["client_tokens"] == 2200
    assert today["cost"] == 2.0 and today["cost_saved"] == 2.4
    assert today["cost_without_ragtrim"] == 4.4
    models = today["models"]
    assert set(models) == {"m1", "org/m:2"}
    assert models["m1"]["cached_tokens"] == 100 and models["org/m:2"]["completion_tokens"] == 7
    assert (await acc.totals("globex"))["month"]["requests"] == 0


def test_access_line_has_no_prompt_text_unless_log_prompts():
    ctx = RequestContext("rid-1", "chat", b"{}", {"model": "m", "messages": []}, {})
    ctx.tenant = "acme"
    ctx.outcome.decision = skip(Why.SHORT_CONTEXT, context_tokens=12)
    ctx.outcome.answer = Answer("http://b:1", None)
    record = RequestRecord(started=0.0, ctx=ctx, status=200)
    scope = {"method": "POST", "path": "/v1/chat/completions"}
    line = line_of(scope, record, log_prompts=False)
    assert line["request_id"] == "rid-1" and line["decision"] == "skip:short-context(12)"
    assert line["tokens_before"] is None and line["backend"] == "http://b:1"
    assert "question" not in line


async def test_the_ledger_has_its_own_redis_budget_off_the_request_path():
    """A ledger write on the cache's 0.1 s budget lost counts on any stall of a busy
    machine (CI, stop 46: 2 of 5 requests counted); it runs after the answer's last byte,
    so it gets its own connections and redis.accounting_timeout_s."""
    from cache.store import RedisStore
    from proxy.settings import Settings
    from proxy.tenancy.policy import make_accounting

    settings = Settings(redis={"url": "redis://127.0.0.1:1", "accounting_timeout_s": 1.5})
    cache = RedisStore(settings.redis.url, timeout=settings.redis.timeout_s)
    accounting = make_accounting(settings, cache, Metrics())
    assert isinstance(accounting.store, RedisStore) and accounting.store is not cache
    assert accounting.store.timeout == 1.5 and accounting.owns_store
    await accounting.aclose()
    await cache.aclose()
    local = MemoryStore()  # no Redis: the one store, not closed by the ledger
    assert make_accounting(Settings(), local, Metrics()).store is local
