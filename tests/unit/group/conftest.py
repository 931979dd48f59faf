import pytest

from kafkalite_server.group import GroupCoordinator

from .fakes import FakeScheduler, MemoryStore, make_coordinator


@pytest.fixture
def scheduler() -> FakeScheduler:
    return FakeScheduler()


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def coordinator(scheduler: FakeScheduler, store: MemoryStore) -> GroupCoordinator:
    return make_coordinator(scheduler, store)
