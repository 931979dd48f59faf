"""The Kafka error codes the coordinator answers with, named once (values from the error table)."""

from __future__ import annotations

from kafkalite.protocol import errors

NONE = 0
UNKNOWN_SERVER_ERROR = errors.UnknownServerError.errno
OFFSET_METADATA_TOO_LARGE = errors.OffsetMetadataTooLargeError.errno
COORDINATOR_LOAD_IN_PROGRESS = errors.CoordinatorLoadInProgressError.errno
COORDINATOR_NOT_AVAILABLE = errors.CoordinatorNotAvailableError.errno
NOT_COORDINATOR = errors.NotCoordinatorError.errno
ILLEGAL_GENERATION = errors.IllegalGenerationError.errno
INCONSISTENT_GROUP_PROTOCOL = errors.InconsistentGroupProtocolError.errno
INVALID_GROUP_ID = errors.InvalidGroupIdError.errno
UNKNOWN_MEMBER_ID = errors.UnknownMemberIdError.errno
INVALID_SESSION_TIMEOUT = errors.InvalidSessionTimeoutError.errno
REBALANCE_IN_PROGRESS = errors.RebalanceInProgressError.errno
INVALID_COMMIT_OFFSET_SIZE = errors.InvalidCommitOffsetSizeError.errno
NON_EMPTY_GROUP = errors.NonEmptyGroupError.errno
GROUP_ID_NOT_FOUND = errors.GroupIdNotFoundError.errno
MEMBER_ID_REQUIRED = errors.MemberIdRequiredError.errno
FENCED_INSTANCE_ID = errors.FencedInstanceIdError.errno
GROUP_SUBSCRIBED_TO_TOPIC = errors.GroupSubscribedToTopicError.errno

#: How a failed write to the offsets log is reported to the member (Kafka's mapping in
#: GroupMetadataManager): the client must look for the coordinator again or shrink the commit.
_STORAGE_ERRORS: dict[type[errors.BrokerResponseError], int] = {
    errors.UnknownTopicOrPartitionError: COORDINATOR_NOT_AVAILABLE,
    errors.NotEnoughReplicasError: COORDINATOR_NOT_AVAILABLE,
    errors.NotEnoughReplicasAfterAppendError: COORDINATOR_NOT_AVAILABLE,
    errors.RequestTimedOutError: COORDINATOR_NOT_AVAILABLE,
    errors.NotLeaderOrFollowerError: NOT_COORDINATOR,
    errors.KafkaStorageError: NOT_COORDINATOR,
    errors.MessageTooLargeError: INVALID_COMMIT_OFFSET_SIZE,
    errors.RecordListTooLargeError: INVALID_COMMIT_OFFSET_SIZE,
    errors.InvalidFetchSizeError: INVALID_COMMIT_OFFSET_SIZE,
}


#: Where writing group metadata (SyncGroup) differs: an oversized group is a server-side
#: problem the member cannot fix, and a timeout just means "rejoin".
_GROUP_STORAGE_ERRORS: dict[type[errors.BrokerResponseError], int] = {
    **_STORAGE_ERRORS,
    errors.RequestTimedOutError: REBALANCE_IN_PROGRESS,
    errors.MessageTooLargeError: UNKNOWN_SERVER_ERROR,
    errors.RecordListTooLargeError: UNKNOWN_SERVER_ERROR,
    errors.InvalidFetchSizeError: UNKNOWN_SERVER_ERROR,
}


def storage_error_code(exc: BaseException, *, group_metadata: bool = False) -> int:
    """The code to answer with when persisting to ``__consumer_offsets`` raised ``exc``."""
    if isinstance(exc, errors.BrokerResponseError):
        table = _GROUP_STORAGE_ERRORS if group_metadata else _STORAGE_ERRORS
        return table.get(type(exc), UNKNOWN_SERVER_ERROR)
    if isinstance(exc, OSError):
        return NOT_COORDINATOR  # a failing log dir: Kafka answers as for KAFKA_STORAGE_ERROR
    return UNKNOWN_SERVER_ERROR
