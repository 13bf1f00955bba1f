"""The request headers sent upstream (issue 23, class 7): X-Forwarded-For gets the
client's address appended, after the hops that were already there."""

from proxy.upstream.headers import upstream_request_headers


def test_forwarded_for_is_appended_after_earlier_hops():
    raw = [(b"x-forwarded-for", b"203.0.113.7, 10.0.0.2"), (b"host", b"x"), (b"accept", b"*/*")]
    out = upstream_request_headers(raw, ("127.0.0.9", 5000))
    assert out == [("accept", "*/*"), ("x-forwarded-for", "203.0.113.7, 10.0.0.2, 127.0.0.9")]


def test_forwarded_for_is_set_when_absent_and_left_alone_without_a_client():
    assert upstream_request_headers([], ("::1", 1)) == [("x-forwarded-for", "::1")]
    assert upstream_request_headers([(b"accept", b"x")], None) == [("accept", "x")]


def test_the_clients_credentials_never_go_upstream_and_the_request_id_is_ragtrims():
    """Issue 33: the tenant's key reached the backend; a 60 KB x-request-id too."""
    raw = [(b"authorization", b"Bearer key-a"), (b"x-api-key", b"key-a"), (b"api-key", b"k"),
           (b"x-request-id", b"r" * 60_000), (b"accept", b"*/*")]  # fmt: skip
    out = upstream_request_headers(raw, None, "ragtrim-id")
    assert out == [("accept", "*/*"), ("x-request-id", "ragtrim-id")]
