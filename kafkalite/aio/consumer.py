"""``AIOKafkaConsumer``: aiokafka's consumer, natively on the event loop.

Positions, pauses and high watermarks are the SDK's pure
:class:`~kafkalite.consumer.subscription_state.SubscriptionState`; the wire bodies of
ListOffsets, OffsetCommit and OffsetFetch and the reading of their answers are the SDK's
sans-IO functions. :class:`~kafkalite.aio.fetcher.Fetcher` keeps one Fetch in flight per
leader, and ``getone`` / ``getmany`` / ``async for`` take what it buffered, decoding one
batch at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from kafkalite.aio.client import AIOClient, security_settings
from kafkalite.aio.errors import ConsumerStoppedError
from kafkalite.aio.fetcher import Chunk, Deserializer, Fetcher, records
from kafkalite.aio.group import GroupMember
from kafkalite.aio.structs import ConsumerRecord, OffsetAndMetadata, OffsetAndTimestamp
from kafkalite.consumer.assignors import RoundRobinAssignor, resolve_assignors
from kafkalite.consumer.commits import (
    Verdict,
    committed_offsets,
    first_offset_fetch_error,
    judge_commit,
    offset_commit_request,
    offset_fetch_request,
)
from kafkalite.consumer.list_offsets import list_offsets_request, read_list_offsets
from kafkalite.consumer.subscription_state import SubscriptionState
from kafkalite.errors import (
    CommitFailedError,
    ConfigError,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
)
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import error_for_code
from kafkalite.structs import OffsetAndMetadata as SdkOffsetAndMetadata
from kafkalite.structs import TopicPartition

__all__ = ["AIOKafkaConsumer"]

log = logging.getLogger(__name__)

EARLIEST = -2
LATEST = -1
_ISOLATION = {"read_uncommitted": 0, "read_committed": 1}
_RESET = {"earliest": EARLIEST, "latest": LATEST}
_DECODE_SLICE = 4096
"""Records ``getmany`` decodes before it lets the loop run again."""


T = TypeVar("T")


def _as_chunks(tp: TopicPartition, chunks: list[Chunk]) -> list[Chunk]:
    return chunks


class AIOKafkaConsumer:
    """See the module docstring; the parameters are aiokafka's."""

    def __init__(
        self, *topics: str, loop: Any = None, bootstrap_servers: str | Iterable[str]
        = "localhost", client_id: str = "aiokafka-0.14.0", group_id: str | None = None,
        group_instance_id: str | None = None, key_deserializer: Deserializer = None,
        value_deserializer: Deserializer = None, fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 52428800, fetch_min_bytes: int = 1,
        max_partition_fetch_bytes: int = 1048576, request_timeout_ms: int = 40000,
        retry_backoff_ms: int = 100, auto_offset_reset: str = "latest",
        enable_auto_commit: bool = True, auto_commit_interval_ms: int = 5000,
        check_crcs: bool = True, metadata_max_age_ms: int = 300000,
        partition_assignment_strategy: Sequence[Any] = (), max_poll_interval_ms: int = 300000,
        rebalance_timeout_ms: int | None = None, session_timeout_ms: int = 10000,
        heartbeat_interval_ms: int = 3000, consumer_timeout_ms: int = 200,
        max_poll_records: int | None = None, ssl_context: Any = None,
        security_protocol: str = "PLAINTEXT", api_version: Any = None,
        exclude_internal_topics: bool = True, connections_max_idle_ms: int = 540000,
        isolation_level: str = "read_uncommitted", sasl_mechanism: str = "PLAIN",
        sasl_plain_password: str | None = None, sasl_plain_username: str | None = None,
        sasl_kerberos_service_name: str = "kafka", sasl_kerberos_domain_name: str | None = None,
        sasl_oauth_token_provider: Any = None, client_rack: str | None = None,
    ) -> None:
        if max_poll_records is not None and (
                not isinstance(max_poll_records, int) or max_poll_records < 1):
            raise ValueError("`max_poll_records` should be positive Integer")
        if auto_offset_reset not in ("earliest", "latest", "none"):
            raise ConfigError("auto_offset_reset",
                              f"must be earliest, latest or none, not {auto_offset_reset!r}")
        if isolation_level not in _ISOLATION:
            raise ConfigError("isolation_level", f"must be read_uncommitted or "
                              f"read_committed, not {isolation_level!r}")
        self._client = AIOClient(
            bootstrap_servers=bootstrap_servers, client_id=client_id,
            request_timeout_ms=request_timeout_ms, metadata_max_age_ms=metadata_max_age_ms,
            retry_backoff_ms=retry_backoff_ms, allow_auto_topic_creation=False,
            security=security_settings(security_protocol, ssl_context, sasl_mechanism,
                                       sasl_plain_username, sasl_plain_password,
                                       sasl_oauth_token_provider))
        self._group_id = group_id
        self._key_deserializer = key_deserializer
        self._value_deserializer = value_deserializer
        self._max_poll_records = max_poll_records
        self._isolation_level = _ISOLATION[isolation_level]
        self._subscriptions = SubscriptionState(auto_offset_reset)
        self._fetcher = Fetcher(
            self._client, self._subscriptions, max_wait_ms=fetch_max_wait_ms,
            min_bytes=fetch_min_bytes, max_bytes=fetch_max_bytes,
            partition_max_bytes=max_partition_fetch_bytes,
            isolation_level=self._isolation_level, check_crcs=check_crcs,
            rack_id=client_rack or "")
        self._request_timeout = request_timeout_ms / 1000
        self._fetch_task: asyncio.Task[None] | None = None
        self._closed = False
        self._exclude_internal = exclude_internal_topics
        self._auto_commit_interval = auto_commit_interval_ms / 1000 \
            if enable_auto_commit and group_id is not None else None
        self._auto_commit_task: asyncio.Task[None] | None = None
        self._group: GroupMember | None = None
        if group_id is not None:
            self._group = GroupMember(
                self._client, self._subscriptions, group_id,
                assignors=resolve_assignors(list(partition_assignment_strategy)
                                            or [RoundRobinAssignor]),
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms or session_timeout_ms,
                heartbeat_interval_ms=heartbeat_interval_ms,
                retry_backoff_ms=retry_backoff_ms, instance_id=group_instance_id,
                before_revoke=self._commit_before_revoke)
        if topics:
            self.subscribe(topics)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect to the cluster and start fetching."""
        await self._client.bootstrap()
        loop = asyncio.get_running_loop()
        self._fetch_task = loop.create_task(self._fetch_loop())
        if self._auto_commit_interval is not None:
            self._auto_commit_task = loop.create_task(self._auto_commit_loop())

    async def stop(self) -> None:
        """Stop fetching and close the connections."""
        if self._closed:
            return
        self._closed = True
        self._fetcher.arrived.set()
        self._fetcher.has_data.set()
        for task in (self._fetch_task, self._auto_commit_task):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        await self._fetcher.close()
        if self._group is not None and self._fetch_task is not None:
            try:
                await self._commit_before_revoke()
                await self._group.leave()
            except KafkaError as exc:
                log.warning("leaving group %r: %s", self._group_id, exc)
        await self._client.close()

    async def __aenter__(self) -> AIOKafkaConsumer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()

    def _check_running(self) -> None:
        if self._closed:
            raise ConsumerStoppedError()

    # -- assignment ------------------------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions (no group membership)."""
        wanted = [TopicPartition(*tp) for tp in partitions]
        self._subscriptions.assign_from_user(wanted)
        self._client.topics.update(tp.topic for tp in wanted)
        self._client.cluster.request_update()
        self._fetcher.arrived.set()

    def subscribe(self, topics: Iterable[str] = (), pattern: str | None = None,
                  listener: Any = None) -> None:
        """Join the group for ``topics`` (or every topic matching ``pattern``); the group
        assigns the partitions. ``listener``'s callbacks may be coroutines."""
        if self._group is None:
            raise IllegalStateError("subscribe() needs a group_id; use assign() without one")
        if bool(list(topics) if not isinstance(topics, str) else True) == (pattern is not None):
            raise IllegalStateError("Subscription to topics and pattern are mutually "
                                    "exclusive; give one of them")
        if listener is not None and not all(
                hasattr(listener, hook)
                for hook in ("on_partitions_revoked", "on_partitions_assigned")):
            raise TypeError("listener should be an instance of ConsumerRebalanceListener")
        if pattern is not None:
            self._subscriptions.subscribe_pattern(pattern)
            self._client.all_topics = True
            self._client.cluster.request_update()
        else:
            self._subscriptions.subscribe([topics] if isinstance(topics, str) else topics)
            self._client.topics.update(self._subscriptions.topics)
        self._group.listener = listener
        self._group.request_rejoin()
        self._fetcher.arrived.set()

    def subscription(self) -> frozenset[str]:
        """The subscribed topics (those matching the pattern, with one)."""
        return self._subscriptions.topics

    def unsubscribe(self) -> None:
        self._subscriptions.unsubscribe()
        self._client.all_topics = False
        if self._group is not None:
            self._group.request_rejoin()

    def assignment(self) -> set[TopicPartition]:
        return set(self._subscriptions.assigned_partitions())

    async def topics(self) -> set[str]:
        """Every topic of the cluster."""
        self._client.all_topics = True
        try:
            await self._client.refresh_metadata()
        finally:
            self._client.all_topics = False
        return set(self._client.cluster.topics(exclude_internal=self._exclude_internal))

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        partitions = self._client.cluster.partitions_for_topic(topic)
        return None if partitions is None else set(partitions)

    # -- positions -------------------------------------------------------------------------

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Read ``partition`` from ``offset`` next."""
        if not isinstance(offset, int) or offset < 0:
            raise ValueError("Offset must be a positive integer")
        self._subscriptions.seek(partition, offset)
        self._fetcher.arrived.set()

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        self._reset_to(partitions, "earliest")

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        self._reset_to(partitions, "latest")

    def _reset_to(self, partitions: Sequence[TopicPartition], strategy: str) -> None:
        targets = partitions or tuple(self._subscriptions.assigned_partitions())
        for tp in targets:
            self._subscriptions.request_reset(tp, strategy)
        self._fetcher.arrived.set()

    async def seek_to_committed(self, *partitions: TopicPartition) -> dict[TopicPartition,
                                                                           int | None]:
        targets = partitions or tuple(self._subscriptions.assigned_partitions())
        committed = await self._fetch_committed(targets)
        result: dict[TopicPartition, int | None] = {}
        for tp in targets:
            offset = committed.get(tp)
            result[tp] = None if offset is None else offset.offset
            if offset is not None:
                self._subscriptions.seek(tp, offset.offset)
        return result

    async def position(self, partition: TopicPartition) -> int:
        """The offset of the next record ``partition`` returns (resolved if unknown)."""
        self._check_running()
        self._subscriptions.state(partition)  # raises if not assigned
        while self._subscriptions.position(partition) is None:
            await self._update_positions()
        position = self._subscriptions.position(partition)
        assert position is not None
        return position

    def highwater(self, partition: TopicPartition) -> int | None:
        """The high watermark last fetched for ``partition`` (None before any fetch)."""
        value = self._subscriptions.state(partition).high_watermark
        return None if value < 0 else value

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        value = self._subscriptions.state(partition).last_stable_offset
        return None if value < 0 else value

    def last_poll_timestamp(self, partition: TopicPartition) -> int | None:
        """When (ms since the epoch) a fetch answer last updated :meth:`highwater` and
        :meth:`last_stable_offset` for ``partition``."""
        self._subscriptions.state(partition)  # raises if not assigned
        return self._fetcher.answered_at.get(partition)

    def pause(self, *partitions: TopicPartition) -> None:
        for tp in partitions:
            self._subscriptions.pause(tp)

    def resume(self, *partitions: TopicPartition) -> None:
        for tp in partitions:
            self._subscriptions.resume(tp)
        self._fetcher.arrived.set()

    def paused(self) -> set[TopicPartition]:
        return self._subscriptions.paused()

    async def _update_positions(self) -> None:
        """Committed offsets for partitions without a position (in a group), then the
        reset strategy for the rest."""
        subscriptions = self._subscriptions
        missing = subscriptions.missing_positions()
        if missing and self._group_id is not None:
            committed = await self._fetch_committed(missing)
            for tp in missing:
                offset = committed.get(tp)
                if offset is not None:
                    subscriptions.seek(tp, offset.offset)
        for tp in subscriptions.missing_positions():
            subscriptions.request_reset(tp)
        resets = subscriptions.awaiting_reset()
        if not resets:
            return
        if "none" in resets.values():
            raise NoOffsetForPartitionError(
                f"no committed offset for {sorted(tp for tp, s in resets.items() if s == 'none')}"
                " and auto_offset_reset is 'none'")
        found = await self._list_offsets({tp: _RESET[s] for tp, s in resets.items()})
        for tp, at in found.items():
            if subscriptions.is_assigned(tp) and tp in subscriptions.awaiting_reset():
                subscriptions.seek(tp, at[0])

    # -- offsets lookups -------------------------------------------------------------------

    async def _list_offsets(self, timestamps: Mapping[TopicPartition, int]
                            ) -> dict[TopicPartition, tuple[int, int]]:
        """(offset, timestamp) of each partition's timestamp (-1 offset: none found)."""
        deadline = time.monotonic() + self._request_timeout
        pending = dict(timestamps)
        results: dict[TopicPartition, tuple[int, int]] = {}
        client = self._client
        while pending:
            for tp in pending:
                client.topics.add(tp.topic)
            if any(client.cluster.leader_for(tp) is None for tp in pending):
                await client.refresh_metadata()
                for tp in pending:
                    client.check_topic(tp.topic)
            by_node: dict[int, list[TopicPartition]] = {}
            for tp in pending:
                leader = client.cluster.leader_for(tp)
                if leader is not None:
                    by_node.setdefault(leader, []).append(tp)
            retry = not by_node
            for node, tps in by_node.items():
                body = await client.send(node, ApiKey.LIST_OFFSETS, list_offsets_request(
                    tps, pending, self._isolation_level))
                found, again, _stale = read_list_offsets(body, pending)
                results.update(found)
                retry = retry or again
            if pending and retry:
                if time.monotonic() >= deadline:
                    raise KafkaTimeoutError(f"ListOffsets for {sorted(pending)} timed out")
                client.cluster.request_update()
                await asyncio.sleep(client.retry_backoff)
        return results

    async def beginning_offsets(self, partitions: Iterable[TopicPartition]
                                ) -> dict[TopicPartition, int]:
        found = await self._list_offsets({tp: EARLIEST for tp in partitions})
        return {tp: offset for tp, (offset, _) in found.items()}

    async def end_offsets(self, partitions: Iterable[TopicPartition]
                          ) -> dict[TopicPartition, int]:
        found = await self._list_offsets({tp: LATEST for tp in partitions})
        return {tp: offset for tp, (offset, _) in found.items()}

    async def offsets_for_times(self, timestamps: Mapping[TopicPartition, int]
                                ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The earliest offset whose timestamp is at least the given one, per partition
        (None: no such record)."""
        for tp, ts in timestamps.items():
            if not isinstance(ts, int) or ts < 0:
                raise ValueError(f"The target time for partition {tp} is {ts}. The target "
                                 "time cannot be negative.")
        found = await self._list_offsets(timestamps)
        return {tp: None if offset < 0 else OffsetAndTimestamp(offset, ts)
                for tp, (offset, ts) in found.items()}

    # -- commits ---------------------------------------------------------------------------

    def _require_group(self, action: str) -> str:
        if self._group_id is None:
            raise IllegalStateError(f"{action} needs a group_id")
        return self._group_id

    def _member(self) -> GroupMember:
        self._require_group("committing offsets")
        assert self._group is not None
        return self._group

    async def commit(self, offsets: Mapping[TopicPartition, Any] | None = None) -> None:
        """Commit ``offsets`` (an offset or (offset, metadata) per partition), or every
        assigned partition's position."""
        group_id = self._require_group("commit()")
        if offsets is None:
            wanted = self._subscriptions.all_consumed()
        else:
            wanted = {}
            for tp, value in offsets.items():
                offset, metadata = (value, "") if isinstance(value, int) else value
                wanted[tp] = SdkOffsetAndMetadata(offset, metadata)
        if not wanted:
            return
        member = self._member()
        generation, member_id = -1, ""
        if self._subscriptions.is_auto_assigned:
            identity = member.membership.commit_identity()
            if identity is None:
                raise CommitFailedError(f"group {group_id!r}: this member has not joined")
            generation, member_id = identity
        body = offset_commit_request(group_id, generation, member_id, None, wanted)
        answer = await self._client.send(await member.coordinator_node(),
                                         ApiKey.OFFSET_COMMIT, body)
        outcome = judge_commit(answer, group_id, generation)
        if outcome.verdict is Verdict.FENCED:
            member.membership.fenced(forget_member=False, generation=generation)
        elif outcome.verdict is Verdict.REBALANCING:
            member.request_rejoin()
        elif outcome.verdict is Verdict.COORDINATOR_MOVED:
            member.coordinator_lost()
        if outcome.error is not None:
            raise outcome.error

    async def _commit_before_revoke(self) -> None:
        """Auto commit: the positions reached, before the partitions go."""
        if self._auto_commit_interval is None:
            return
        try:
            await self.commit()
        except KafkaError as exc:
            log.warning("group %r: auto commit failed: %s", self._group_id, exc)

    async def _auto_commit_loop(self) -> None:
        assert self._auto_commit_interval is not None
        while True:
            await asyncio.sleep(self._auto_commit_interval)
            if self._group is not None and self._subscriptions.is_auto_assigned and \
                    not self._group.membership.holds_assignment:
                continue
            await self._commit_before_revoke()

    async def committed(self, partition: TopicPartition) -> int | None:
        """The group's committed offset of ``partition`` (None: none committed)."""
        found = (await self._fetch_committed([partition])).get(partition)
        return None if found is None else found.offset

    async def _fetch_committed(self, partitions: Iterable[TopicPartition]
                               ) -> dict[TopicPartition, OffsetAndMetadata]:
        group_id = self._require_group("committed offsets")
        deadline = time.monotonic() + self._request_timeout
        while True:
            try:
                body = await self._client.send(await self._member().coordinator_node(),
                                               ApiKey.OFFSET_FETCH,
                                               offset_fetch_request(group_id, list(partitions)))
            except KafkaError as exc:
                if not exc.retriable or time.monotonic() >= deadline:
                    raise
                self._member().coordinator_lost()
                await asyncio.sleep(self._client.retry_backoff)
                continue
            code = first_offset_fetch_error(body)
            if code:
                error = error_for_code(code)
                if not error.retriable or time.monotonic() >= deadline:
                    raise error(f"fetching committed offsets of group {group_id!r}")
                self._member().coordinator_lost()
                await asyncio.sleep(self._client.retry_backoff)
                continue
            return {tp: OffsetAndMetadata(meta.offset, meta.metadata)
                    for tp, meta in committed_offsets(body).items()}

    # -- records ---------------------------------------------------------------------------

    async def _fetch_loop(self) -> None:
        fetcher = self._fetcher
        loop = asyncio.get_running_loop()
        group = self._group
        while not self._closed:
            try:
                await self._client.maybe_refresh()
                self._match_pattern()
                if group is not None and group.needs_join:
                    await group.ensure_active()
                await self._update_positions()
            except Exception as exc:  # the application hears of it at its next getmany
                fetcher.fail(exc)
                await asyncio.sleep(self._client.retry_backoff)
            fetcher.send_fetches()
            fetcher.arrived.clear()
            waits = [loop.create_task(fetcher.arrived.wait())]
            if group is not None:
                waits.append(loop.create_task(group.changed.wait()))
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in waits:
                    task.cancel()

    def _match_pattern(self) -> None:
        """With a pattern, follow the topics the metadata shows that match it."""
        subscriptions = self._subscriptions
        if subscriptions.pattern is None or self._group is None:
            return
        matching = subscriptions.matching_topics(self._client.cluster.topics(
            exclude_internal=self._exclude_internal))
        if subscriptions.change_topics(matching):
            self._group.request_rejoin()

    async def _take(self, wanted: set[TopicPartition] | None, limit: int,
                    build: Callable[[TopicPartition, list[Chunk]], list[T]]
                    ) -> dict[TopicPartition, list[T]]:
        """Up to ``limit`` buffered records, each slice of :data:`_DECODE_SLICE` decoded and
        ``build`` into results with the loop let in between (a fetch answer can hold
        hundreds of thousands of records)."""
        fetcher = self._fetcher
        taken_by_tp: dict[TopicPartition, list[T]] = {}
        taken = 0
        while taken < limit:
            part = fetcher.take(wanted, min(limit - taken, _DECODE_SLICE))
            fetcher.arrived.set()  # positions moved: the fetch loop sends the next round
            count = 0
            for tp, chunks in part.items():
                taken_by_tp.setdefault(tp, []).extend(build(tp, chunks))
                count += sum(len(chunk.columns.offsets) for chunk in chunks)
            taken += count
            if count < _DECODE_SLICE or taken >= limit:
                break
            await asyncio.sleep(0)
            self._check_running()
        return taken_by_tp

    async def _wait_and_take(self, partitions: tuple[TopicPartition, ...], timeout_ms: float,
                             max_records: int | None,
                             build: Callable[[TopicPartition, list[Chunk]], list[T]]
                             ) -> dict[TopicPartition, list[T]]:
        """What has arrived within ``timeout_ms`` (waiting for the first records)."""
        self._check_running()
        limit = max_records or self._max_poll_records or 1 << 30
        wanted = set(partitions) if partitions else None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        fetcher = self._fetcher
        while True:
            fetcher.has_data.clear()
            taken = await self._take(wanted, limit, build)
            if taken:
                return taken
            left = deadline - loop.time()
            if left <= 0:
                return {}
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(fetcher.has_data.wait(), left)
            self._check_running()

    def _records(self, tp: TopicPartition, chunks: list[Chunk]) -> list[ConsumerRecord]:
        return records(tp, chunks, self._key_deserializer, self._value_deserializer)

    async def getmany(self, *partitions: TopicPartition, timeout_ms: int = 0,
                      max_records: int | None = None
                      ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """The records that arrive within ``timeout_ms``, by partition."""
        return await self._wait_and_take(partitions, timeout_ms, max_records, self._records)

    async def getmany_arrow(self, *partitions: TopicPartition, timeout_ms: int = 0,
                            max_records: int | None = None, timestamp_type: bool = False
                            ) -> Any:
        """Like :meth:`getmany`, but the records come as one ``pyarrow.RecordBatch`` with
        the columns key, value, topic, partition, offset, timestamp and headers (the
        threaded consumer's ``poll_arrow`` layout, see :mod:`kafkalite.arrow`), built
        from the decoded batches without a ConsumerRecord per record; zero rows if none
        came. Keys and values are the raw bytes (no deserializers). Needs pyarrow."""
        from kafkalite.arrow import record_batch, require_pyarrow

        require_pyarrow()
        chunks = await self._wait_and_take(partitions, timeout_ms, max_records, _as_chunks)
        return record_batch([(tp.topic, tp.partition, chunk.timestamp_type, chunk.columns)
                             for tp, runs in chunks.items() for chunk in runs],
                            timestamp_type=timestamp_type)

    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord:
        """The next record (waiting as long as it takes)."""
        while True:
            records = await self.getmany(*partitions, timeout_ms=1000, max_records=1)
            for batch in records.values():
                return batch[0]

    def __aiter__(self) -> AIOKafkaConsumer:
        if self._closed:
            raise ConsumerStoppedError()
        return self

    async def __anext__(self) -> ConsumerRecord:
        try:
            return await self.getone()
        except ConsumerStoppedError:
            raise StopAsyncIteration from None
