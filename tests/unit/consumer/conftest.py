"""A clock the group-client tests move by hand."""

import pytest
from fake_clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1000.0)
