"""A leader's ISR writes to the partition state node (in-memory backend): conditional on
the version, the controller notified, and the node's document in Kafka's layout."""

from __future__ import annotations

import asyncio

import pytest

from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.cluster.memory_store import MemoryEnsemble
from kafkalite_server.cluster.partition_states import PartitionStateStore
from kafkalite_server.cluster.store_worker import StoreWorker
from kafkalite_server.replication.isr_store import IsrState, StaleIsrVersionError

PATH = layout.partition_state_path("t", 0)


def test_writes_are_conditional_and_notify_the_controller():
    session = MemoryEnsemble().connect()
    session.create(PATH, layout.LeaderIsr(1, 5, (1, 2, 3), 1).encode(), makepath=True)

    async def scenario() -> None:
        worker = StoreWorker("test")
        worker.bind(asyncio.get_running_loop(), threaded=False)
        states = PartitionStateStore(lambda: session, worker)
        assert await states.read(("t", 0)) == (IsrState(1, 5, (1, 2, 3), 1), 0)
        assert await states.write(("t", 0), IsrState(1, 5, (1, 2), 1), 0) == 1
        with pytest.raises(StaleIsrVersionError):
            await states.write(("t", 0), IsrState(1, 5, (1,), 1), 0)
    asyncio.run(scenario())
    assert layout.LeaderIsr.decode(PATH, session.get(PATH)[0]) == layout.LeaderIsr(1, 5, (1, 2), 1)
    (notification,) = session.children(layout.ISR_CHANGE_NOTIFICATION)
    path = f"{layout.ISR_CHANGE_NOTIFICATION}/{notification}"
    assert layout.decode_isr_change(path, session.get(path)[0]) == [("t", 0)]
