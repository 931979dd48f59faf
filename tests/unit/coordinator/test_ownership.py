"""Ownership of an internal topic's partitions: loading, owned, epochs, the owner errors."""

import pytest

from kafkalite.protocol.errors import CoordinatorLoadInProgressError, NotCoordinatorError
from kafkalite_server.coordinator.hashing import partition_for
from kafkalite_server.coordinator.ownership import Ownership

KEY = "group-a"


def test_a_partition_goes_from_loading_to_owned_to_gone() -> None:
    ownership = Ownership(4)
    partition = partition_for(KEY, 4)
    assert ownership.error_for(KEY) == NotCoordinatorError.errno
    ownership.begin_loading(partition, 3)
    assert ownership.error_for(KEY) == CoordinatorLoadInProgressError.errno
    assert (ownership.loading, ownership.epoch(partition)) == ({partition}, 3)
    assert ownership.complete_loading(partition)
    assert ownership.error_for(KEY) == 0 and ownership.owns(KEY)
    ownership.raise_epoch(partition, 2)  # older: kept
    ownership.raise_epoch(partition, 7)
    assert ownership.epoch(partition) == 7
    ownership.unload(partition)
    assert ownership.error_for(KEY) == NotCoordinatorError.errno
    assert not ownership.complete_loading(partition)  # nothing was loading
    assert ownership.epoch(partition) == -1


def test_the_partition_count_follows_the_topic_only_while_nothing_is_held() -> None:
    ownership = Ownership(50)
    ownership.adopt_partition_count(1)
    assert ownership.partition_for("console-consumer-12345") == 0
    ownership.begin_loading(0, 0)
    ownership.adopt_partition_count(1)  # the same count: fine
    with pytest.raises(RuntimeError, match="partition count"):
        ownership.adopt_partition_count(50)
    with pytest.raises(ValueError, match="needs partitions"):
        Ownership(0)
