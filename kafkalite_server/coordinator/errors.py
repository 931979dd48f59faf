"""The one mapping of a coordinator's failed write to the error its client is answered.

A write fails either at once (the append raised) or while waiting for the ISR (the
replica manager's replication error); both map the same way, as Kafka's coordinators map
them: the client looks for the coordinator again (NOT_COORDINATOR) when this broker no
longer leads the partition or its log dir failed, and retries later
(COORDINATOR_NOT_AVAILABLE) when the ISR did not take the write in time.
"""

from __future__ import annotations

from kafkalite.protocol import errors

COORDINATOR_ERRORS: dict[int, int] = {
    errors.UnknownTopicOrPartitionError.errno: errors.CoordinatorNotAvailableError.errno,
    errors.NotEnoughReplicasError.errno: errors.CoordinatorNotAvailableError.errno,
    errors.NotEnoughReplicasAfterAppendError.errno: errors.CoordinatorNotAvailableError.errno,
    errors.RequestTimedOutError.errno: errors.CoordinatorNotAvailableError.errno,
    errors.NotLeaderOrFollowerError.errno: errors.NotCoordinatorError.errno,
    errors.KafkaStorageError.errno: errors.NotCoordinatorError.errno,
}


def coordinator_error(error: int) -> int:
    """The coordinator error for an append or replication error code (0 stays 0)."""
    if error == 0:
        return 0
    return COORDINATOR_ERRORS.get(error, errors.UnknownServerError.errno)


def write_error(exc: BaseException) -> int:
    """The coordinator error for an exception an append raised."""
    if isinstance(exc, errors.BrokerResponseError):
        return coordinator_error(exc.errno)
    if isinstance(exc, OSError):
        return errors.NotCoordinatorError.errno  # a failing log dir, as KAFKA_STORAGE_ERROR
    return errors.UnknownServerError.errno
