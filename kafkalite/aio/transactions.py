"""Idempotence and transactions for the asyncio producer.

The decisions are the SDK's sans-IO state machines: the producer id, epochs and sequence
numbers are :class:`~kafkalite.producer.idempotence.IdempotenceState`'s, the transaction's
states and the typing of its errors (fenced, abortable, fatal) are
:class:`~kafkalite.producer.transactions.TransactionManager`'s. This module only sends their
requests (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn) to
the right coordinator, retrying what :func:`~kafkalite.producer.transactions.classify` says
to retry within ``request_timeout_ms``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kafkalite.aio.client import GROUP_KEY, TRANSACTION_KEY, AIOClient
from kafkalite.errors import KafkaError, KafkaTimeoutError
from kafkalite.producer.idempotence import FIRST_BUMP_VERSION, IdempotenceState
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
from kafkalite.structs import OffsetAndMetadata, TopicPartition

ErrorIn = Callable[[dict[str, Any]], int]


class Transactions:
    """The producer's idempotence and (with a ``transactional_id``) its transactions."""

    def __init__(self, client: AIOClient, transactional_id: str | None,
                 transaction_timeout_ms: int, request_timeout_ms: int,
                 retry_backoff_ms: int, flush: Callable[[], Awaitable[None]]) -> None:
        self._client = client
        self.idempotence = IdempotenceState()
        self.manager = None if transactional_id is None else TransactionManager(
            transactional_id, transaction_timeout_ms)
        self._timeout = request_timeout_ms / 1000
        self._backoff = retry_backoff_ms / 1000
        self._flush = flush
        self._lock = asyncio.Lock()

    # -- producer id -----------------------------------------------------------------------

    async def initialize(self) -> None:
        """Get a producer id: from the transaction coordinator (fencing older producers
        with the same transactional id), or from any broker for idempotence alone."""
        manager = self.manager
        if manager is None:
            node = await self._client.any_node()
            body = self.idempotence.request_body(
                await self._client.api_version(node, ApiKey.INIT_PRODUCER_ID))
            answer = await self._client.send(node, ApiKey.INIT_PRODUCER_ID, body)
            if answer["error_code"]:
                self.idempotence.request_failed(retriable=False)
                raise error_of(answer["error_code"], "InitProducerId")
            self.idempotence.identity_received(answer["producer_id"], answer["producer_epoch"])
            return
        if manager.state is State.UNINITIALIZED:
            manager.apply(Event.INIT)
        answer = await self._call(TRANSACTION_KEY, manager.transactional_id,
                                  ApiKey.INIT_PRODUCER_ID, manager.init_body(), top_error)
        producer_id, epoch = answer["producer_id"], answer["producer_epoch"]
        manager.initialized(producer_id, epoch)
        idempotence = self.idempotence
        if idempotence.state in (IdState.NO_ID, IdState.BUMP_REQUIRED, IdState.FATAL):
            if idempotence.state is IdState.FATAL:
                idempotence.state = IdState.NO_ID
            idempotence.request_body(FIRST_BUMP_VERSION)
        idempotence.identity_received(producer_id, epoch)

    # -- transactions ----------------------------------------------------------------------

    def _manager(self, action: str) -> TransactionManager:
        if self.manager is None:
            raise KafkaError(f"{action}: the producer has no transactional_id")
        return self.manager

    def in_transaction(self) -> bool:
        return self.manager is not None and self.manager.state is State.IN_TRANSACTION

    async def begin(self) -> None:
        async with self._lock:
            self._manager("begin_transaction()").begin()

    async def add_partition(self, tp: TopicPartition) -> None:
        """Before the transaction's first record to ``tp``: AddPartitionsToTxn."""
        async with self._lock:
            manager = self._manager("send()")
            if not manager.new_partition(tp):
                return
            await self._call(TRANSACTION_KEY, manager.transactional_id,
                             ApiKey.ADD_PARTITIONS_TO_TXN, {
                                 "v3_and_below_transactional_id": manager.transactional_id,
                                 "v3_and_below_producer_id": manager.producer_id,
                                 "v3_and_below_producer_epoch": manager.producer_epoch,
                                 "v3_and_below_topics": [{"name": tp.topic,
                                                          "partitions": [tp.partition]}]},
                             add_partitions_error)
            manager.partitions.add(tp)

    async def send_offsets(self, offsets: Mapping[TopicPartition, Any], group_id: str) -> None:
        async with self._lock:
            manager = self._manager("send_offsets_to_transaction()")
            manager.require(State.IN_TRANSACTION, action="send_offsets_to_transaction()")
            await self._call(TRANSACTION_KEY, manager.transactional_id,
                             ApiKey.ADD_OFFSETS_TO_TXN, {
                                 "transactional_id": manager.transactional_id,
                                 "producer_id": manager.producer_id,
                                 "producer_epoch": manager.producer_epoch,
                                 "group_id": group_id}, top_error)
            manager.offsets_added = True
            by_topic: dict[str, list[dict[str, Any]]] = {}
            for tp, value in offsets.items():
                offset, metadata = (value, "") if isinstance(value, int) else value[:2]
                committed = OffsetAndMetadata(int(offset), metadata or "", -1)
                by_topic.setdefault(tp.topic, []).append({
                    "partition_index": tp.partition, "committed_offset": committed.offset,
                    "committed_leader_epoch": committed.leader_epoch,
                    "committed_metadata": committed.metadata})
            await self._call(GROUP_KEY, group_id, ApiKey.TXN_OFFSET_COMMIT, {
                "transactional_id": manager.transactional_id, "group_id": group_id,
                "producer_id": manager.producer_id, "producer_epoch": manager.producer_epoch,
                "generation_id": -1, "member_id": "", "group_instance_id": None,
                "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]},
                txn_offset_commit_error)

    async def commit(self) -> None:
        async with self._lock:
            manager = self._manager("commit_transaction()")
            manager.require(State.IN_TRANSACTION, State.COMMITTING,
                            action="commit_transaction()")
            await self._flush_in_time()
            if manager.state is State.ABORTABLE_ERROR:
                assert manager.error is not None
                raise manager.error
            manager.apply(Event.COMMIT)
            await self._end(True)

    async def abort(self) -> None:
        async with self._lock:
            manager = self._manager("abort_transaction()")
            manager.require(State.IN_TRANSACTION, State.ABORTABLE_ERROR, State.ABORTING,
                            action="abort_transaction()")
            manager.apply(Event.ABORT)
            try:
                await self._flush_in_time()
            except TransactionTimeoutError:
                raise
            except KafkaError:
                pass  # failed batches are what the abort is for
            await self._end(False)

    async def _flush_in_time(self) -> None:
        try:
            await asyncio.wait_for(self._flush(), self._timeout)
        except TimeoutError as exc:
            raise TransactionTimeoutError("records not delivered within "
                                          f"{self._timeout:g} s") from exc

    async def _end(self, commit: bool) -> None:
        manager = self._manager("ending a transaction")
        if manager.has_partitions():
            await self._call(TRANSACTION_KEY, manager.transactional_id, ApiKey.END_TXN, {
                "transactional_id": manager.transactional_id,
                "producer_id": manager.producer_id, "producer_epoch": manager.producer_epoch,
                "committed": commit}, top_error)
        if manager.ended():
            await self.initialize()

    def batch_failed(self, producer_id: int, epoch: int, error: BaseException) -> None:
        """A stamped batch failed: its sequence is unknown, and its transaction failed."""
        self.idempotence.batch_failed(producer_id, epoch)
        if self.manager is not None:
            self.manager.batch_failed(error)

    # -- plumbing --------------------------------------------------------------------------

    async def _call(self, key_type: int, key: str, api_key: ApiKey, body: Mapping[str, Any],
                    error_in: ErrorIn) -> dict[str, Any]:
        """Send to the coordinator of ``key``, retrying within the request timeout; what
        cannot be retried goes through the manager (fatal or abortable) and is raised."""
        deadline = time.monotonic() + self._timeout
        node: int | None = None
        manager = self._manager(api_key.name)
        while True:
            if time.monotonic() >= deadline:
                raise TransactionTimeoutError(
                    f"{api_key.name} for {key!r} did not complete in time")
            try:
                if node is None:
                    node = await self._client.find_coordinator(key, key_type)
                response = await self._client.send(node, api_key, body)
            except TransactionError:
                raise
            except KafkaTimeoutError:
                continue
            except KafkaError as exc:
                if not exc.retriable:
                    raise manager.fail(exc) from exc
                node = None
                await asyncio.sleep(self._backoff)
                continue
            errno = error_in(response)
            outcome = classify(errno)
            if outcome == "ok":
                return response
            if outcome == "fail":
                raise manager.fail(error_of(errno, f"{api_key.name} for {key!r}"))
            if outcome == "refind":
                node = None
            await asyncio.sleep(min(self._backoff, 0.02) if outcome == "retry"
                                else self._backoff)
