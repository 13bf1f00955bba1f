"""Documents the scorer cannot judge are kept verbatim (issue 23)."""

import base64
import random

from compressors.verbatim import is_opaque, merge, partition

BLOB = base64.b64encode(random.Random(0).randbytes(6000)).decode()
URL = "see https://example.com/" + "a/b?c=d&" * 380
CODE = "Usage:\n```python\ndef f(x):\n    return x + 1\n```"
CHINESE = "北京是中华人民共和国的首都，也是全国的政治和文化中心。" * 5
PROSE = "The quick brown fox jumps over the lazy dog. " * 10 + "See https://example.com/a/b/c."


def test_opaque_documents():
    assert is_opaque(BLOB) and is_opaque(URL) and is_opaque(CODE)
    assert not is_opaque(CHINESE) and not is_opaque(PROSE) and not is_opaque("")


def test_partition_and_merge_keep_order():
    texts = [PROSE, BLOB, CHINESE, URL]
    chosen = partition(texts)
    assert chosen == [0, 2]
    assert merge(texts, chosen, ["a", "b"]) == ["a", BLOB, "b", URL]
