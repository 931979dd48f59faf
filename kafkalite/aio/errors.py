"""aiokafka's error names (``aiokafka.errors``) as kafkalite's own classes.

Every broker error is the SDK's class for its code, so one ``except`` works with the
threaded and the asyncio API; aiokafka's other spellings of a code are aliases of it. The
client-side conditions only aiokafka names are small classes at the end.
"""

from __future__ import annotations

from kafkalite.errors import (
    BrokerNotAvailableError,
    BrokerResponseError,
    BrokerUnreachableError,
    Cancelled,
    ClusterAuthorizationFailedError,
    CommitFailedError,
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    CorrelationIdError,
    CorruptMessageError,
    CorruptRecordException,
    DelegationTokenAuthDisabledError,
    DelegationTokenAuthorizationFailedError,
    DelegationTokenExpiredError,
    DelegationTokenNotFoundError,
    DelegationTokenOwnerMismatchError,
    DelegationTokenRequestNotAllowedError,
    DuplicateSequenceNumberError,
    FetchSessionIdNotFoundError,
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    IllegalArgumentError,
    IllegalGenerationError,
    IllegalSaslStateError,
    IllegalStateError,
    IncompatibleBrokerVersion,
    InconsistentGroupProtocolError,
    InvalidCommitOffsetSizeError,
    InvalidConfigurationError,
    InvalidFetchRequestError,
    InvalidFetchSessionEpochError,
    InvalidGroupIdError,
    InvalidPartitionsError,
    InvalidPrincipalTypeError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidReplicationAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidRequiredAcksError,
    InvalidSessionTimeoutError,
    InvalidTimestampError,
    InvalidTopicError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    KafkaConfigurationError,
    KafkaConnectionError,
    KafkaError,
    KafkaProtocolError,
    KafkaStorageError,
    KafkaTimeoutError,
    LeaderNotAvailableError,
    ListenerNotFoundError,
    LogDirNotFoundError,
    MemberIdRequiredError,
    MessageSizeTooLargeError,
    MetadataEmptyBrokerList,
    NetworkError,
    NodeNotReadyError,
    NoError,
    NonEmptyGroupError,
    NoOffsetForPartitionError,
    NotControllerError,
    NotCoordinatorError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderForPartitionError,
    OffsetMetadataTooLargeError,
    OffsetOutOfRangeError,
    OperationNotAttemptedError,
    OutOfOrderSequenceNumberError,
    PolicyViolationError,
    ProducerFencedError,
    QuotaViolationError,
    ReassignmentInProgressError,
    RebalanceInProgressError,
    RecordListTooLargeError,
    ReplicaNotAvailableError,
    RequestTimedOutError,
    SaslAuthenticationFailedError,
    SecurityDisabledError,
    StaleControllerEpochError,
    StaleMetadata,
    TooManyInFlightRequests,
    TopicAlreadyExistsError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    TransactionCoordinatorFencedError,
    UnknownError,
    UnknownMemberIdError,
    UnknownProducerIdError,
    UnknownTopicOrPartitionError,
    UnrecognizedBrokerVersion,
    UnsupportedCodecError,
    UnsupportedForMessageFormatError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
)

InvalidMessageError = CorruptMessageError
StaleLeaderEpochCodeError = NetworkError
GroupLoadInProgressError = CoordinatorLoadInProgressError
GroupCoordinatorNotAvailableError = CoordinatorNotAvailableError
NotCoordinatorForGroupError = NotCoordinatorError
OutOfOrderSequenceNumber = OutOfOrderSequenceNumberError
DuplicateSequenceNumber = DuplicateSequenceNumberError
InvalidProducerEpoch = InvalidProducerEpochError
InvalidTxnState = InvalidTxnStateError
InvalidProducerIdMapping = InvalidProducerIdMappingError
InvalidTransactionTimeout = InvalidTransactionTimeoutError
ConcurrentTransactions = ConcurrentTransactionsError
TransactionCoordinatorFenced = TransactionCoordinatorFencedError
TransactionalIdAuthorizationFailed = TransactionalIdAuthorizationFailedError
SecurityDisabled = SecurityDisabledError
OperationNotAttempted = OperationNotAttemptedError
LogDirNotFound = LogDirNotFoundError
SaslAuthenticationFailed = SaslAuthenticationFailedError
UnknownProducerId = UnknownProducerIdError
ReassignmentInProgress = ReassignmentInProgressError
DelegationTokenAuthDisabled = DelegationTokenAuthDisabledError
DelegationTokenNotFound = DelegationTokenNotFoundError
DelegationTokenOwnerMismatch = DelegationTokenOwnerMismatchError
DelegationTokenRequestNotAllowed = DelegationTokenRequestNotAllowedError
DelegationTokenAuthorizationFailed = DelegationTokenAuthorizationFailedError
DelegationTokenExpired = DelegationTokenExpiredError
InvalidPrincipalType = InvalidPrincipalTypeError
NonEmptyGroup = NonEmptyGroupError
GroupIdNotFound = GroupIdNotFoundError
FetchSessionIdNotFound = FetchSessionIdNotFoundError
InvalidFetchSessionEpoch = InvalidFetchSessionEpochError
ListenerNotFound = ListenerNotFoundError
MemberIdRequired = MemberIdRequiredError
ProducerFenced = ProducerFencedError
AuthenticationFailedError = SaslAuthenticationFailedError
AuthenticationMethodNotSupported = UnsupportedSaslMechanismError
NoBrokersAvailable = BrokerUnreachableError
KafkaUnavailableError = BrokerUnreachableError
RecordTooLargeError = MessageSizeTooLargeError


class ConsumerStoppedError(Exception):
    """The consumer was stopped while (or before) a call waited for records."""


class IllegalOperation(Exception):
    """A call that the client's state does not allow (sending outside a transaction)."""


class ProducerClosed(KafkaError):
    """The producer was stopped while (or before) a record was sent."""


__all__ = [
    "AuthenticationFailedError",
    "AuthenticationMethodNotSupported",
    "BrokerNotAvailableError",
    "BrokerResponseError",
    "Cancelled",
    "ClusterAuthorizationFailedError",
    "CommitFailedError",
    "ConcurrentTransactions",
    "ConsumerStoppedError",
    "CoordinatorLoadInProgressError",
    "CoordinatorNotAvailableError",
    "CorrelationIdError",
    "CorruptRecordException",
    "DelegationTokenAuthDisabled",
    "DelegationTokenAuthorizationFailed",
    "DelegationTokenExpired",
    "DelegationTokenNotFound",
    "DelegationTokenOwnerMismatch",
    "DelegationTokenRequestNotAllowed",
    "DuplicateSequenceNumber",
    "FetchSessionIdNotFound",
    "GroupAuthorizationFailedError",
    "GroupCoordinatorNotAvailableError",
    "GroupIdNotFound",
    "GroupLoadInProgressError",
    "IllegalArgumentError",
    "IllegalGenerationError",
    "IllegalOperation",
    "IllegalSaslStateError",
    "IllegalStateError",
    "IncompatibleBrokerVersion",
    "InconsistentGroupProtocolError",
    "InvalidCommitOffsetSizeError",
    "InvalidConfigurationError",
    "InvalidFetchRequestError",
    "InvalidFetchSessionEpoch",
    "InvalidGroupIdError",
    "InvalidMessageError",
    "InvalidPartitionsError",
    "InvalidPrincipalType",
    "InvalidProducerEpoch",
    "InvalidProducerIdMapping",
    "InvalidReplicationAssignmentError",
    "InvalidReplicationFactorError",
    "InvalidRequestError",
    "InvalidRequiredAcksError",
    "InvalidSessionTimeoutError",
    "InvalidTimestampError",
    "InvalidTopicError",
    "InvalidTransactionTimeout",
    "InvalidTxnState",
    "KafkaConfigurationError",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaProtocolError",
    "KafkaStorageError",
    "KafkaTimeoutError",
    "KafkaUnavailableError",
    "LeaderNotAvailableError",
    "ListenerNotFound",
    "LogDirNotFound",
    "MemberIdRequired",
    "MessageSizeTooLargeError",
    "MetadataEmptyBrokerList",
    "NoBrokersAvailable",
    "NoError",
    "NoOffsetForPartitionError",
    "NodeNotReadyError",
    "NonEmptyGroup",
    "NotControllerError",
    "NotCoordinatorError",
    "NotCoordinatorForGroupError",
    "NotEnoughReplicasAfterAppendError",
    "NotEnoughReplicasError",
    "NotLeaderForPartitionError",
    "OffsetMetadataTooLargeError",
    "OffsetOutOfRangeError",
    "OperationNotAttempted",
    "OutOfOrderSequenceNumber",
    "PolicyViolationError",
    "ProducerClosed",
    "ProducerFenced",
    "QuotaViolationError",
    "ReassignmentInProgress",
    "RebalanceInProgressError",
    "RecordListTooLargeError",
    "RecordTooLargeError",
    "ReplicaNotAvailableError",
    "RequestTimedOutError",
    "SaslAuthenticationFailed",
    "SecurityDisabled",
    "StaleControllerEpochError",
    "StaleLeaderEpochCodeError",
    "StaleMetadata",
    "TooManyInFlightRequests",
    "TopicAlreadyExistsError",
    "TopicAuthorizationFailedError",
    "TransactionCoordinatorFenced",
    "TransactionalIdAuthorizationFailed",
    "UnknownError",
    "UnknownMemberIdError",
    "UnknownProducerId",
    "UnknownTopicOrPartitionError",
    "UnrecognizedBrokerVersion",
    "UnsupportedCodecError",
    "UnsupportedForMessageFormatError",
    "UnsupportedSaslMechanismError",
    "UnsupportedVersionError",
]
