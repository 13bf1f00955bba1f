"""The real ragtrim process the hostile tests probe, one per test module."""

import pytest

from tests.support.hostile import serve_hostile


@pytest.fixture(scope="module")
def hostile_ragtrim():
    yield from serve_hostile()
