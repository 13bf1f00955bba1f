"""The compressor's fingerprint per rate is made once it has loaded, not per request
(proxy/compression/fingerprints.py, issue 43)."""

from proxy.compression.fingerprints import MAX_KEPT, Fingerprints


class Counted:
    name, version = "counted", 1

    def __init__(self):
        self.calls, self.precision = 0, "auto"

    def fingerprint(self) -> str:
        self.calls += 1
        return f"counted:precision={self.precision}"


class Counter:
    def __init__(self):
        self.name = "approx"

    def __call__(self, text: str) -> int:
        return len(text.split())


def test_made_once_per_rate_and_counter_once_ready():
    compressor, counter, ready = Counted(), Counter(), [False]
    prints = Fingerprints(compressor, counter, lambda: ready[0])
    assert prints(0.5) == "counted:precision=auto|rate=0.500"
    compressor.precision = "int8"  # chosen by the load
    ready[0] = True
    assert prints(0.5) == "counted:precision=int8|rate=0.500"  # not kept before ready
    calls = compressor.calls
    for _ in range(10):
        assert prints(0.5).endswith("rate=0.500") and prints("auto").endswith("rate=auto")
    assert compressor.calls == calls + 1  # auto made once, 0.5 kept from before
    counter.name = "hf:smollm2"  # the backend named its model: the counter changed
    prints(0.5)
    assert compressor.calls == calls + 2


def test_client_rates_never_grow_the_table_without_bound():
    prints = Fingerprints(Counted(), Counter())
    for i in range(10 * MAX_KEPT):
        prints(0.01 + i / (20 * MAX_KEPT))
    assert len(prints._made) <= MAX_KEPT
