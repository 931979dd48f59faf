"""The Kafka error codes the coordinator answers with, named once (values from the error table)."""

from __future__ import annotations

from kafkalite.protocol import errors
from kafkalite_server.coordinator.errors import write_error

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

#: Where a failed write to the offsets log is answered otherwise than every coordinator
#: write (Kafka's GroupMetadataManager): an oversized commit is the member's to shrink.
_OFFSETS_WRITE_ERRORS: dict[int, int] = {
    errors.MessageTooLargeError.errno: INVALID_COMMIT_OFFSET_SIZE,
    errors.RecordListTooLargeError.errno: INVALID_COMMIT_OFFSET_SIZE,
    errors.InvalidFetchSizeError.errno: INVALID_COMMIT_OFFSET_SIZE,
}

#: Where writing group metadata (SyncGroup) differs: a timeout just means "rejoin" (an
#: oversized group is a server-side problem the member cannot fix: UNKNOWN_SERVER_ERROR).
_GROUP_WRITE_ERRORS: dict[int, int] = {
    errors.RequestTimedOutError.errno: REBALANCE_IN_PROGRESS,
}


def storage_error_code(exc: BaseException, *, group_metadata: bool = False) -> int:
    """The code to answer with when persisting to ``__consumer_offsets`` raised ``exc``."""
    overlay = _GROUP_WRITE_ERRORS if group_metadata else _OFFSETS_WRITE_ERRORS
    if isinstance(exc, errors.BrokerResponseError) and exc.errno in overlay:
        return overlay[exc.errno]
    return write_error(exc)
