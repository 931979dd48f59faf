"""Sends the transactional producer's requests: FindCoordinator (key type 1),
InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn.

Each public call blocks the calling thread (as the Java producer's do), retrying
retriable errors until ``max_block_ms``; the decisions are
:class:`~kafkalite.producer.transactions.TransactionManager`'s. The producer id it gets is
handed to the sender's idempotence state on the I/O thread, so batches carry it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kafkalite.client.coordinator import GROUP_KEY, TRANSACTION_KEY, find_coordinator
from kafkalite.errors import KafkaError, KafkaTimeoutError
from kafkalite.producer.idempotence import FIRST_BUMP_VERSION
from kafkalite.producer.idempotence import State as IdState
from kafkalite.producer.transactions import (
    Event,
    State,
    TransactionError,
    TransactionManager,
    TransactionTimeoutError,
    add_partitions_error,
    classify,
    error_of,
    top_error,
    txn_offset_commit_error,
)
from kafkalite.protocol import ApiKey
from kafkalite.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from kafkalite.client.client import KafkaClient
    from kafkalite.producer.sender import Sender



class TransactionDriver:
    def __init__(self, client: KafkaClient, sender: Sender, config: Mapping[str, Any],
                 flush: Callable[[float | None], None]) -> None:
        self.manager = TransactionManager(config["transactional_id"],
                                          config["transaction_timeout_ms"])
        self._client = client
        self._sender = sender
        self._flush = flush
        self._max_block = config["max_block_ms"] / 1000
        self._backoff = config["retry_backoff_ms"] / 1000
        self._coordinator: int | None = None
        self._lock = threading.RLock()
        sender.transactions = self.manager

    # -- the producer's methods --------------------------------------------------------------

    def init_transactions(self, timeout: float | None = None) -> None:
        with self._lock:
            self.manager.apply(Event.INIT)
            self._initialize(self._deadline(timeout))

    def begin_transaction(self) -> None:
        with self._lock:
            self.manager.begin()

    def add_partition(self, tp: TopicPartition) -> None:
        """Before the transaction's first record to ``tp``: AddPartitionsToTxn."""
        with self._lock:
            if not self.manager.new_partition(tp):
                return
            manager = self.manager
            body = {"v3_and_below_transactional_id": manager.transactional_id,
                    "v3_and_below_producer_id": manager.producer_id,
                    "v3_and_below_producer_epoch": manager.producer_epoch,
                    "v3_and_below_topics": [{"name": tp.topic, "partitions": [tp.partition]}]}
            self._call_coordinator(ApiKey.ADD_PARTITIONS_TO_TXN, body, self._deadline(None),
                                   add_partitions_error)
            manager.partitions.add(tp)

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, Any],
                                    group_metadata: ConsumerGroupMetadata | str,
                                    timeout: float | None = None) -> None:
        with self._lock:
            manager = self.manager
            manager.require(State.IN_TRANSACTION, action="send_offsets_to_transaction()")
            metadata = (group_metadata if isinstance(group_metadata, ConsumerGroupMetadata)
                        else ConsumerGroupMetadata(group_metadata))
            if metadata.group_id is None:
                raise KafkaError("send_offsets_to_transaction(): the consumer has no group_id")
            deadline = self._deadline(timeout)
            self._call_coordinator(ApiKey.ADD_OFFSETS_TO_TXN, {
                "transactional_id": manager.transactional_id,
                "producer_id": manager.producer_id, "producer_epoch": manager.producer_epoch,
                "group_id": metadata.group_id}, deadline, top_error)
            manager.offsets_added = True
            self._txn_offset_commit(metadata, offsets, deadline)

    def commit_transaction(self, timeout: float | None = None) -> None:
        with self._lock:
            manager = self.manager
            manager.require(State.IN_TRANSACTION, State.COMMITTING,
                            action="commit_transaction()")
            deadline = self._deadline(timeout)
            self._flush_until(deadline)
            if manager.state is State.ABORTABLE_ERROR:
                assert manager.error is not None
                raise manager.error
            manager.apply(Event.COMMIT)
            self._end(True, deadline)

    def abort_transaction(self, timeout: float | None = None) -> None:
        with self._lock:
            manager = self.manager
            manager.require(State.IN_TRANSACTION, State.ABORTABLE_ERROR, State.ABORTING,
                            action="abort_transaction()")
            manager.apply(Event.ABORT)
            deadline = self._deadline(timeout)
            try:
                self._flush_until(deadline)
            except TransactionTimeoutError:
                raise
            except KafkaError:
                pass  # failed batches are what the abort is for
            self._end(False, deadline)

    # -- steps ---------------------------------------------------------------------------

    def _initialize(self, deadline: float) -> None:
        body = self.manager.init_body()
        response = self._call_coordinator(ApiKey.INIT_PRODUCER_ID, body, deadline, top_error)
        producer_id, epoch = response["producer_id"], response["producer_epoch"]
        self.manager.initialized(producer_id, epoch)
        done = threading.Event()

        def install() -> None:
            idempotence = self._sender.idempotence
            if idempotence.state in (IdState.NO_ID, IdState.BUMP_REQUIRED, IdState.FATAL):
                if idempotence.state is IdState.FATAL:
                    idempotence.state = IdState.NO_ID
                idempotence.request_body(FIRST_BUMP_VERSION)
            if idempotence.state in (IdState.INITIALIZING, IdState.BUMPING):
                idempotence.identity_received(producer_id, epoch)
            done.set()

        self._client.call_soon(install)
        done.wait(max(deadline - time.monotonic(), 0.1))

    def _end(self, commit: bool, deadline: float) -> None:
        manager = self.manager
        if manager.has_partitions():
            self._call_coordinator(ApiKey.END_TXN, {
                "transactional_id": manager.transactional_id,
                "producer_id": manager.producer_id, "producer_epoch": manager.producer_epoch,
                "committed": commit}, deadline, top_error)
        if manager.ended():
            self._initialize(deadline)

    def _flush_until(self, deadline: float) -> None:
        try:
            self._flush(max(deadline - time.monotonic(), 0))
        except KafkaTimeoutError as exc:
            raise TransactionTimeoutError(f"records not delivered in time: {exc}") from exc

    def _txn_offset_commit(self, metadata: ConsumerGroupMetadata,
                           offsets: Mapping[TopicPartition, Any], deadline: float) -> None:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, value in offsets.items():
            committed = value if isinstance(value, OffsetAndMetadata) \
                else OffsetAndMetadata(int(value), "", -1)
            by_topic.setdefault(tp.topic, []).append({
                "partition_index": tp.partition, "committed_offset": committed.offset,
                "committed_leader_epoch": committed.leader_epoch,
                "committed_metadata": committed.metadata})
        manager = self.manager
        body = {"transactional_id": manager.transactional_id, "group_id": metadata.group_id,
                "producer_id": manager.producer_id, "producer_epoch": manager.producer_epoch,
                "generation_id": metadata.generation_id, "member_id": metadata.member_id,
                "group_instance_id": metadata.group_instance_id,
                "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]}
        self._call(GROUP_KEY, metadata.group_id or "", ApiKey.TXN_OFFSET_COMMIT, body,
                   deadline, txn_offset_commit_error)

    # -- plumbing ---------------------------------------------------------------------------

    def _deadline(self, timeout: float | None) -> float:
        return time.monotonic() + (self._max_block if timeout is None else timeout)

    def _call_coordinator(self, api_key: ApiKey, body: Mapping[str, Any], deadline: float,
                          error_in: Callable[[dict[str, Any]], int]) -> dict[str, Any]:
        return self._call(TRANSACTION_KEY, self.manager.transactional_id, api_key, body,
                          deadline, error_in)

    def _call(self, key_type: int, key: str, api_key: ApiKey, body: Mapping[str, Any],
              deadline: float, error_in: Callable[[dict[str, Any]], int]) -> dict[str, Any]:
        """Send to the coordinator of ``key``, retrying until ``deadline``; a failure that is
        not retriable goes through the manager (fatal or abortable) and is raised."""
        node: int | None = None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TransactionTimeoutError(
                    f"{api_key.name} for {key!r} did not complete in time")
            try:
                if node is None:
                    node = find_coordinator(self._client, key, deadline, key_type=key_type)
                response = self._client.send(node, api_key, body).get(remaining)
            except TransactionError:
                raise
            except KafkaTimeoutError:
                continue
            except KafkaError as exc:
                if not exc.retriable:
                    raise self.manager.fail(exc) from exc
                node = None
                time.sleep(self._backoff)
                continue
            errno = error_in(response)
            outcome = classify(errno)
            if outcome == "ok":
                return response
            if outcome == "fail":
                raise self.manager.fail(error_of(errno, f"{api_key.name} for {key!r}"))
            if outcome == "refind":
                node = None
            time.sleep(min(self._backoff, 0.02) if outcome == "retry" else self._backoff)
