"""bench.lib.lag_probe: the bare subscriber reads each batch's ts off a real PUB socket."""

import threading
import time

import msgspec
import zmq

from bench.lib.lag_probe import listen, quantiles


def test_quantiles_are_exact_milliseconds():
    lags = [i / 1000 for i in range(1, 101)]  # 1 .. 100 ms
    q = quantiles(lags)
    assert q["batches"] == 100 and q["lag_p50_ms"] == 50.5 and q["lag_max_ms"] == 100.0
    assert 99.0 <= q["lag_p99_ms"] <= 100.0
    assert quantiles([])["lag_p99_ms"] is None


def test_listen_measures_the_lag_of_stamped_batches():
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    stop, got = threading.Event(), []
    thread = threading.Thread(target=lambda: got.extend(listen([f"tcp://127.0.0.1:{port}"], stop)))
    thread.start()
    try:
        time.sleep(0.3)  # the SUB connects (PUB drops what it sends before)
        for seq in range(5):
            stamped = time.time() - 0.2  # a batch made 200 ms ago
            batch = msgspec.msgpack.encode([stamped, [], 0])
            pub.send_multipart([b"", seq.to_bytes(8, "big"), batch])
        time.sleep(0.3)
    finally:
        stop.set()
        thread.join(5)
        pub.close(0)
        ctx.term()
    assert len(got) == 5 and all(0.2 <= lag < 1.0 for lag in got)
