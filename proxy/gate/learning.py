"""What every quantity the cost gate learns from traffic shares: samples that age out,
and one record per tenant. A learned value prices every later request, so one client
that feeds it lies must not steer everyone (docs/decisions/0040-cost-gate-learned-laws.md):

- per tenant (`PerTenant`): a tenant's traffic teaches the values its own requests are
  priced with, never another tenant's. Bounded (`MAX_TENANTS`, least recently used
  first out): tenant names come from configuration, but the record must not grow with
  anything a client sends;
- aged (`fresh`): a sample counts for `MAX_AGE_S` after it was taken, then the value
  falls back to what holds without it (the compressor's prior or the proxy's own
  calibration). A poisoned value is therefore gone at most `MAX_AGE_S` after the last
  poisoned sample, whatever traffic follows: the recovery bound the tests state.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

MAX_AGE_S = 60.0  # how long a learned sample counts (the recovery bound)
MAX_TENANTS = 1024  # tenants whose learned values are kept (least recently used leave)

T = TypeVar("T")
S = TypeVar("S", bound=tuple)


class PerTenant(Generic[T]):
    """One `make()` per tenant, at most `limit` of them (the least recently used leaves)."""

    def __init__(self, make: Callable[[], T], limit: int = MAX_TENANTS):
        self.make, self.limit = make, max(1, limit)
        self._items: OrderedDict[str, T] = OrderedDict()

    def get(self, tenant: str) -> T:
        item = self._items.get(tenant)
        if item is None:
            item = self._items[tenant] = self.make()
            while len(self._items) > self.limit:
                self._items.popitem(last=False)
        else:
            self._items.move_to_end(tenant)
        return item

    def __len__(self) -> int:
        return len(self._items)

    def peek(self, tenant: str) -> T | None:
        """`tenant`'s item when there is one; none made, none moved (a scrape reads)."""
        return self._items.get(tenant)


def fresh(samples: Iterable[S], now: float, max_age: float = MAX_AGE_S) -> list[S]:
    """The samples (tuples whose last item is when they were taken) still young enough."""
    return [s for s in samples if now - s[-1] <= max_age]


def clamp(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))
