"""KIP-890's transaction verification: before a transactional batch opens a transaction on
a partition, the partition's leader asks the producer's transaction coordinator whether
the partition is in the producer's ongoing transaction (Kafka 3.6+).

Without it, any writer could append one transactional batch under a producer id no
coordinator knows, or to a partition its transaction never added: nobody would ever write
the marker that ends it, and the partition's last stable offset would stay there, holding
every read_committed consumer. The same question guards TxnOffsetCommit (was the group's
offsets partition added with AddOffsetsToTxn?), so its answer no longer depends on whether
the group's coordinator also coordinates the transactional id.

The coordinator answers in process when this broker is the coordinator, else through
AddPartitionsToTxn v4 with ``verify_only`` (the inter-broker form). A batch that continues
a transaction already open on the partition needs no question. A marker written while a
question is out ends the transaction it was about: the answer is then INVALID_TXN_STATE,
as Kafka's verification guard makes it, so a late "yes" never opens a new transaction.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Collection
from typing import TYPE_CHECKING

from kafkalite.errors import KafkaError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidTxnStateError,
    NetworkError,
    NotCoordinatorError,
    NotEnoughReplicasError,
    ProducerFencedError,
    TransactionAbortableError,
)
from kafkalite.records.batch_header import (
    LOG_OVERHEAD,
    TRANSACTIONAL_BIT,
    V2_ATTRIBUTES_POSITION,
    V2_MAGIC_POSITION,
    iter_batch_headers,
)
from kafkalite_server.txn.config import TRANSACTION_STATE_TOPIC
from kafkalite_server.txn.metadata import TopicPartition
from kafkalite_server.txn.peers import ask_peer

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker
    from kafkalite_server.cluster.peer_requests import PeerRequests

log = logging.getLogger(__name__)

VERIFY_VERSION = 4
"""AddPartitionsToTxn v4: several transactions per request, with ``verify_only``."""

_COORDINATOR_UNREACHABLE = frozenset({
    NetworkError.errno, CoordinatorLoadInProgressError.errno,
    CoordinatorNotAvailableError.errno, NotCoordinatorError.errno,
    ConcurrentTransactionsError.errno})

Refusal = tuple[int, str]
"""An error code and its message, for a produce response."""


def for_produce(answer: int) -> Refusal | None:
    """Kafka's mapping of a verification answer to a Produce error: a fenced producer gets
    INVALID_PRODUCER_EPOCH, a partition outside the transaction INVALID_TXN_STATE, and an
    unreachable or busy coordinator NOT_ENOUGH_REPLICAS, which every client retries
    without a metadata refresh."""
    if answer == 0:
        return None
    if answer == ProducerFencedError.errno:
        return InvalidProducerEpochError.errno, "the producer's epoch is fenced"
    if answer in (InvalidTxnStateError.errno, TransactionAbortableError.errno):
        return InvalidTxnStateError.errno, "the partition was not added to the transaction"
    if answer in _COORDINATOR_UNREACHABLE:
        return NotEnoughReplicasError.errno, ("unable to verify the partition is in the "
                                              f"transaction (error {answer})")
    if answer == InvalidProducerIdMappingError.errno:
        return answer, "the transaction coordinator does not know this producer id"
    return answer, "the transaction coordinator refused the batch"


def for_txn_offset_commit(answer: int, fenced_error: int) -> int:
    """Kafka's mapping for TxnOffsetCommit: a network failure reads as
    COORDINATOR_LOAD_IN_PROGRESS (retried without a coordinator lookup), a fenced
    producer as the request version's fencing error."""
    if answer == NetworkError.errno:
        return CoordinatorLoadInProgressError.errno
    if answer == ProducerFencedError.errno:
        return fenced_error
    if answer == TransactionAbortableError.errno:
        return InvalidTxnStateError.errno
    return answer


class _Guard:
    """One partition of a question that is out; a marker for its producer ends it."""

    __slots__ = ("ended",)

    def __init__(self) -> None:
        self.ended = False


class TransactionVerifier:
    def __init__(self, broker: Broker, peers: PeerRequests, *, enabled: bool = True) -> None:
        """``peers`` asks the coordinators; ``enabled``: Kafka's
        ``transaction.partition.verification.enable``."""
        self._broker = broker
        self.peers = peers
        self.enabled = enabled
        self._guards: dict[tuple[TopicPartition, int], list[_Guard]] = {}

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        """The coordinator's answer per partition (0: in the ongoing transaction)."""
        guards = {tp: _Guard() for tp in partitions}
        for tp, guard in guards.items():
            self._guards.setdefault((tp, producer_id), []).append(guard)
        try:
            answers = await self._ask(transactional_id, producer_id, producer_epoch, partitions)
        finally:
            for tp, guard in guards.items():
                waiting = self._guards[(tp, producer_id)]
                waiting.remove(guard)
                if not waiting:
                    del self._guards[(tp, producer_id)]
        return {tp: InvalidTxnStateError.errno if answer == 0 and guards[tp].ended else answer
                for tp, answer in answers.items()}

    def marker_written(self, tp: TopicPartition, producer_id: int) -> None:
        """A marker ended ``producer_id``'s transaction on ``tp``: answers still out about
        it are stale."""
        for guard in self._guards.get((tp, producer_id), ()):
            guard.ended = True

    async def refuse_unverified(self, transactional_id: str | None,
                                entries: list[tuple[TopicPartition, memoryview | None]]
                                ) -> dict[TopicPartition, Refusal]:
        """Produce's check: the partitions whose transactional batch would open a
        transaction the coordinator did not add them to, with the error to answer."""
        if not self.enabled:
            return {}
        opening = {key: producer for key, records in entries
                   if (producer := _transactional_producer(records)) is not None
                   and not self._in_open_transaction(key, producer[0])}
        if not opening:
            return {}
        if len({producer_id for producer_id, _ in opening.values()}) > 1:
            return dict.fromkeys(opening, (InvalidProducerIdMappingError.errno,
                                           "transactional batches of several producer ids"))
        if not transactional_id:
            return dict.fromkeys(opening, (InvalidTxnStateError.errno,
                                           "a batch opening a transaction needs the "
                                           "request's transactional id"))
        producer_id, producer_epoch = next(iter(opening.values()))
        answers = await self.verify(transactional_id, producer_id, producer_epoch, opening)
        return {tp: refusal for tp, answer in answers.items()
                if (refusal := for_produce(answer)) is not None}

    def _in_open_transaction(self, key: TopicPartition, producer_id: int) -> bool:
        """Whether the producer's transaction is open on the partition already (or the
        partition is not led here, which the append itself answers)."""
        try:
            partition = self._broker.replica_manager.leader_partition(*key)
        except KafkaError:
            return True
        return producer_id in partition.log.producer_state.ongoing

    async def _ask(self, transactional_id: str, producer_id: int, producer_epoch: int,
                   partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        txn = self._broker.txn_coordinator
        state_partition = txn.runtime.placed(transactional_id)
        leader = self._broker.metadata_cache.leader_endpoint(TRANSACTION_STATE_TOPIC,
                                                             state_partition)
        if leader is None:
            return dict.fromkeys(partitions, CoordinatorNotAvailableError.errno)
        if leader.node_id == self._broker.node_id:
            return txn.coordinator.verify_partitions(transactional_id, producer_id,
                                                     producer_epoch, partitions)
        by_topic: dict[str, list[int]] = {}
        for topic, index in partitions:
            by_topic.setdefault(topic, []).append(index)
        body = {"transactions": [{
            "transactional_id": transactional_id, "producer_id": producer_id,
            "producer_epoch": producer_epoch, "verify_only": True,
            "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]}]}
        response = await ask_peer(self.peers, leader, ApiKey.ADD_PARTITIONS_TO_TXN,
                                  VERIFY_VERSION, body)
        if response is None:
            return dict.fromkeys(partitions, NetworkError.errno)
        if response["error_code"]:
            return dict.fromkeys(partitions, response["error_code"])
        answers = {(topic["name"], result["partition_index"]): result["partition_error_code"]
                   for transaction in response["results_by_transaction"]
                   if transaction["transactional_id"] == transactional_id
                   for topic in transaction["topic_results"]
                   for result in topic["results_by_partition"]}
        return {tp: answers.get(tp, CoordinatorNotAvailableError.errno) for tp in partitions}


_ATTRIBUTES_LOW_BYTE = V2_ATTRIBUTES_POSITION + 1
"""A v2 batch's magic byte, and the low byte of its int16 attributes (the transactional
bit), counted from the start of its ``offset, length`` prefix."""
_LENGTH = struct.Struct(">i")


def _transactional_producer(records: memoryview | None) -> tuple[int, int] | None:
    """(producer id, epoch) of the first transactional data batch, if any; batches that
    cannot be read are the append's to refuse."""
    if records is None:
        return None
    if (len(records) > _ATTRIBUTES_LOW_BYTE and records[V2_MAGIC_POSITION] == 2
            and not records[_ATTRIBUTES_LOW_BYTE] & TRANSACTIONAL_BIT
            and _LENGTH.unpack_from(records, 8)[0] + LOG_OVERHEAD == len(records)):
        return None  # one plain batch, every client's usual produce: two bytes decide
    try:
        for header in iter_batch_headers(records):
            if header.is_transactional and not header.is_control:
                return header.producer_id, header.producer_epoch
    except KafkaError:
        return None
    return None
