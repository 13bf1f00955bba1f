from compressors import Budget, Compressor, IdentityCompressor


def test_identity_returns_documents_unchanged():
    c = IdentityCompressor(len)
    assert isinstance(c, Compressor)
    r = c.compress(["abc", "", "de f"], question="q", budget=Budget(rate=0.1))
    assert r.texts == ("abc", "", "de f")
    assert r.tokens_before == r.tokens_after == 7
    assert r.ratio == 1.0
    assert c.fingerprint() == "identity:v1:counter=len"
