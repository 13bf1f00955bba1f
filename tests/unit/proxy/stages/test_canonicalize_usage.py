"""The canonicalize, tenant and usage stages, called directly."""

from proxy.context import RequestContext
from proxy.metrics import Metrics
from proxy.prompt.prefix import prefix_key
from proxy.prompt.segment import Segmenter
from proxy.settings import CanonicalSettings, TenancySettings
from proxy.stages.ask_usage import UsageStage
from proxy.stages.canonicalize import CanonicalizeStage
from proxy.stages.segment import SegmentStage
from proxy.stages.tenant import TenantStage
from proxy.tenancy.identity import Identity, tenant_salt

SYSTEM = {"role": "system", "content": "You are terse.  \r\nAnswer briefly."}


def ctx(body: dict, route: str = "chat") -> RequestContext:
    return RequestContext("r", route, b"{}", body, {})


def canonicalize(**settings) -> CanonicalizeStage:
    return CanonicalizeStage(CanonicalSettings(**settings), Metrics(), offload_bytes=65_536)


async def test_static_prefix_keyed_with_its_replay_body():
    c = ctx({"model": "m", "messages": [SYSTEM, {"role": "user", "content": "q"}]})
    await canonicalize()(c)
    static = '[["system","You are terse.  \\r\\nAnswer briefly."]]'
    assert c.prefix_key == prefix_key("m", static, "", "")
    assert c.replay == {"model": "m", "max_tokens": 1, "temperature": 0, "messages": [SYSTEM]}
    assert c.outcome.prefix_key == c.prefix_key
    assert c.upstream_body() == b"{}"  # nothing to rewrite with the default rules


async def test_a_body_without_model_is_keyed_and_replayed_without_one():
    """vLLM makes `model` optional (issue 31): the key uses "" and the replay names none."""
    c = ctx({"messages": [SYSTEM, {"role": "user", "content": "q"}]})
    await canonicalize()(c)
    static = '[["system","You are terse.  \\r\\nAnswer briefly."]]'
    assert c.prefix_key == prefix_key("", static, "", "")
    assert c.replay == {"max_tokens": 1, "temperature": 0, "messages": [SYSTEM]}


async def test_rules_rewrite_the_static_part_only_through_the_prompt():
    user = {"role": "user", "content": "q  \r\n"}
    c = ctx({"model": "m", "messages": [SYSTEM, user]})
    await canonicalize(normalize_newlines=True, strip_trailing_whitespace=True)(c)
    system = {"role": "system", "content": "You are terse.\nAnswer briefly."}
    assert c.body["messages"] == [system, user]
    assert c.prompt.modified and c.replay["messages"] == c.body["messages"][:1]


async def test_no_static_part_no_key():
    c = ctx({"model": "m", "messages": [{"role": "user", "content": "q"}]})
    await canonicalize()(c)
    assert c.prefix_key is None and c.replay is None and c.outcome.prefix_key is None


async def test_completion_static_part_ends_at_the_segmenters_static_end():
    prompt = "Instruction.\n<ragtrim:doc>Ada.</ragtrim:doc> Question?"
    c = ctx({"model": "m", "prompt": prompt}, route="completions")
    await SegmentStage(Segmenter())(c)
    await canonicalize()(c)
    assert c.replay["prompt"] == "Instruction.\n" and c.prefix_key is not None


async def test_tenant_salt_set_through_the_prompt_and_keys_differ_by_tenant():
    keys = []
    for tenant in ("acme", "globex"):
        stage = TenantStage(Identity(TenancySettings(default_tenant=tenant, salt_secret="s")))
        c = ctx({"model": "m", "messages": [SYSTEM], "cache_salt": "mine"})
        await stage(c)
        assert c.body["cache_salt"] == tenant_salt(tenant, "s") and c.tenant == tenant
        await canonicalize()(c)
        keys.append(c.prefix_key)
    assert keys[0] != keys[1]


async def test_usage_asked_for_a_stream_only_when_the_client_did_not():
    asked = ctx({"model": "m", "messages": [], "stream": True,
                 "stream_options": {"include_usage": True}})  # fmt: skip
    plain, whole = ctx({"model": "m", "messages": [], "stream": True}), ctx({"model": "m"})
    for c in (asked, plain, whole):
        await UsageStage()(c)
    assert (asked.usage_added, plain.usage_added, whole.usage_added) == (False, True, False)
    assert plain.body["stream_options"] == {"include_usage": True}
    assert asked.upstream_body() == whole.upstream_body() == b"{}"


async def test_usage_ragtrim_adds_is_never_continuous():
    """Issue 31: vLLM sends continuous usage only with include_usage; the client asked
    for continuous_usage_stats without it, so it must get no usage at all (ragtrim's
    include_usage had put usage on every chunk)."""
    options = {"continuous_usage_stats": True}
    c = ctx({"model": "m", "messages": [], "stream": True, "stream_options": options})
    await UsageStage()(c)
    assert c.usage_added
    assert c.body["stream_options"] == {"continuous_usage_stats": False, "include_usage": True}
    asked = {"include_usage": True, "continuous_usage_stats": True}
    mine = ctx({"model": "m", "messages": [], "stream": True, "stream_options": asked})
    await UsageStage()(mine)
    assert not mine.usage_added and mine.body["stream_options"] == asked
