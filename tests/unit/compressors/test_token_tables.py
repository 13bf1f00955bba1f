"""Scoped tables of chunk tokens: one per scope, the largest dropped past capacity."""

from __future__ import annotations

import numpy as np

from compressors._token_tables import BITS, ScopedTables, TokenTable


def _learnt(names: list[str], per: int = 2):
    tokens = np.arange(3 * per * len(names), dtype=np.int32).reshape(3, per * len(names))
    return [(names, tokens, np.arange(0, per * len(names) + 1, per))]


def test_a_table_reads_back_each_chunks_tokens():
    table = TokenTable()
    table.add(*_learnt(["a", "b"])[0])
    table.add(*_learnt(["c"], per=3)[0])
    code = table.entries["c"]
    assert (code >> BITS, code & ((1 << BITS) - 1)) == (4, 3) and table.used == 7


def test_each_scope_learns_into_its_own_table():
    tables = ScopedTables(capacity=100)
    a = tables.learn("a", None, _learnt(["x", "y"]))
    assert tables.get("a") is a and tables.get("b") is None
    assert tables.learn("a", a, _learnt(["z"])) is a and set(a.entries) == {"x", "y", "z"}
    b = tables.learn("b", None, _learnt(["x"]))
    assert b is not a and set(b.entries) == {"x"} and tables.used == 8


def test_the_largest_table_goes_first_past_capacity():
    """A tenant's flood drops its own table; one holding less keeps its (decision 0014)."""
    tables = ScopedTables(capacity=9)
    tables.learn("small", None, _learnt(["1"]))
    tables.learn("flood", None, _learnt(["2", "3", "4"]))
    tables.learn("flood", tables.get("flood"), _learnt(["5"]))
    assert tables.get("flood") is None and tables.get("small") is not None
    assert tables.used == 2


def test_a_dropped_table_is_still_written_for_the_request_that_read_it():
    tables = ScopedTables(capacity=6)
    seen = tables.learn("a", None, _learnt(["1", "2"]))
    tables.learn("b", None, _learnt(["3", "4"]))  # drops "a"
    assert tables.get("a") is None
    again = tables.learn("a", seen, _learnt(["5"]))
    assert again is seen and set(seen.entries) == {"1", "2", "5"}
    assert tables.used <= 6
