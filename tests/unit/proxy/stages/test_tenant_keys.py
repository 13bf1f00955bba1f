"""Which header carries a tenant's key (issue 31): the bearer of OpenAI's clients, or
the anthropic SDK's x-api-key; a request that repeats either is refused."""

import pytest

from proxy.errors import Unauthorized
from proxy.http.head import head_headers
from proxy.settings import TenancySettings
from proxy.tenancy.identity import Identity

KEYS = {"key-a": "acme", "key-b": "globex"}


class Keys:
    def authenticate(self, headers: dict[str, str]) -> str:
        identity = Identity(TenancySettings(api_keys=KEYS, salt_secret="s" * 16))
        return identity.resolve(headers).require()


def stage() -> Keys:
    return Keys()


def test_the_bearer_names_the_tenant():
    assert stage().authenticate({"authorization": "Bearer key-a"}) == "acme"


def test_the_anthropic_sdks_x_api_key_names_the_tenant():
    assert stage().authenticate({"x-api-key": "key-b"}) == "globex"


def test_the_bearer_is_judged_when_both_are_sent():
    with pytest.raises(Unauthorized):
        stage().authenticate({"authorization": "Bearer wrong", "x-api-key": "key-a"})
    assert stage().authenticate({"authorization": "Bearer key-a", "x-api-key": "x"}) == "acme"


def test_a_wrong_or_missing_key_is_a_401():
    for headers in ({"x-api-key": "nope"}, {}, {"authorization": "Basic key-a"}):
        with pytest.raises(Unauthorized):
            stage().authenticate(headers)


def test_a_repeated_key_header_is_a_401():
    scope = {"headers": [(b"x-api-key", b"key-a"), (b"x-api-key", b"key-b")]}
    with pytest.raises(Unauthorized):
        head_headers(scope)
