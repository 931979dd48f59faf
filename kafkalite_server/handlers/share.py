"""Share-group APIs (KIP-932): ShareGroupHeartbeat (76) and ShareGroupDescribe (77) at the
group coordinator; ShareFetch (78) and ShareAcknowledge (79) at partition leaders; the
share state APIs (83-87) at the share coordinator, which only brokers send; and the admin
APIs DescribeShareGroupOffsets (90) and AlterShareGroupOffsets (91).

Each handler translates between the wire body and the share service; every decision is
the service's. Topics are named by id on the wire (:mod:`kafkalite_server.topic_ids`); an
id no topic has is UNKNOWN_TOPIC_ID.

Authorization follows Kafka's KafkaApis: Read on the group (the whole request refused),
then Read on each topic fetched or acknowledged (those partitions answer
TOPIC_AUTHORIZATION_FAILED), Describe on the topics a member subscribes to; Describe on
each group described; ClusterAction for the share state APIs.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from dataclasses import replace
from typing import Any

from kafkalite.protocol.errors import (
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    InvalidRequestError,
    NotLeaderOrFollowerError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server.handlers.groups import DESCRIBE_GROUPS, client_host
from kafkalite_server.handlers.modern_groups import (
    SUBSCRIBED_TOPICS,
    describe_state,
    described_assignment,
    described_group,
    described_member,
    heartbeat_response,
    subscription_refused,
)
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.api_checks import (
    CLUSTER_ACTION,
    DESCRIBE_TOPICS,
    READ_GROUP,
    READ_TOPICS,
    declares,
    requires,
)
from kafkalite_server.share.config import SHARE_GROUP_TYPE, SIMPLE_ASSIGNOR
from kafkalite_server.share.coordinator import NO_LEADER_EPOCH
from kafkalite_server.share.partition import Acknowledgement
from kafkalite_server.share.records import StateKey
from kafkalite_server.share.service import ShareService
from kafkalite_server.share.sessions import FINAL_EPOCH, OPEN_EPOCH
from kafkalite_server.share.state import StateBatch
from kafkalite_server.topic_ids import ZERO

Body = dict[str, Any]

FETCHED_TOPICS = replace(READ_TOPICS, target="each topic fetched or acknowledged")


def _topic_name(ctx: RequestContext, id_: uuid.UUID) -> str | None:
    cache = ctx.broker.metadata_cache
    name = cache.topic_name(id_)
    return name if name is not None and cache.partitions_of(name) is not None else None


def _topic_id(ctx: RequestContext, name: str) -> uuid.UUID:
    return ctx.broker.metadata_cache.topic_id(name)


def _error_response(body: Body, errno: int, message: str | None = None) -> Body:
    return {"throttle_time_ms": 0, "error_code": errno, "error_message": message,
            "responses": [], "node_endpoints": []}


# ------------------------------------------------------------------ the group coordinator


@requires(READ_GROUP, "group_id")
@declares(SUBSCRIBED_TOPICS)
async def handle_share_group_heartbeat(service: ShareService, ctx: RequestContext,
                                       body: Body) -> Body:
    subscribed = body["subscribed_topic_names"]
    refused = subscription_refused(ctx, subscribed)
    if refused is not None:
        return refused
    result = await service.groups.heartbeat(
        body["group_id"], body["member_id"], body["member_epoch"], body["rack_id"], subscribed,
        client_id=ctx.header.client_id or "", client_host=client_host(ctx))
    return heartbeat_response(result,
                              service.groups.groups.heartbeat_interval_ms(body["group_id"]))


@declares(DESCRIBE_GROUPS)
async def handle_share_group_describe(service: ShareService, ctx: RequestContext,
                                      body: Body) -> Body:
    described = []
    for group_id in body["group_ids"]:
        entry, group = described_group(ctx, service.groups.groups, group_id, SHARE_GROUP_TYPE)
        if group is not None:
            describe_state(ctx, body, entry, group, SIMPLE_ASSIGNOR)
            entry["members"] = [{
                **described_member(m, m.member_epoch),
                "assignment": described_assignment(
                    m.assignment, lambda id_: _topic_name(ctx, id_) or ""),
            } for m in group.members.values()]
        described.append(entry)
    return {"throttle_time_ms": 0, "groups": described}


# ------------------------------------------------------------------ partition leaders


def _acknowledgements(batches: list[Body]) -> list[Acknowledgement]:
    return [Acknowledgement(b["first_offset"], b["last_offset"], tuple(b["acknowledge_types"]))
            for b in batches]


def _leader(ctx: RequestContext, name: str | None, index: int) -> tuple[Body, Any]:
    """The partition's current leader as ShareFetch answers it, and its endpoint."""
    cache = ctx.broker.metadata_cache
    state = cache.partition(name, index) if name is not None else None
    if state is None:
        return {"leader_id": -1, "leader_epoch": -1}, None
    endpoint = cache.brokers.get(state.leader)
    return {"leader_id": state.leader, "leader_epoch": state.leader_epoch}, endpoint


class _Partitions:
    """A request's partitions by (topic id, index), with their names and refusals."""

    def __init__(self, ctx: RequestContext, ids: list[tuple[uuid.UUID, int]]) -> None:
        self.names: dict[uuid.UUID, str | None] = {}
        for id_, _index in ids:
            if id_ not in self.names:
                self.names[id_] = _topic_name(ctx, id_)
        known = {name for name in self.names.values() if name is not None}
        self.denied = FETCHED_TOPICS.denied(ctx, known)

    def error(self, id_: uuid.UUID) -> int:
        name = self.names.get(id_)
        if name is None:
            return UnknownTopicIdError.errno
        return TopicAuthorizationFailedError.errno if name in self.denied else 0


async def _apply_acknowledgements(service: ShareService, group_id: str, member_id: str,
                                  partitions: _Partitions,
                                  acks: dict[tuple[uuid.UUID, int], list[Acknowledgement]]
                                  ) -> dict[tuple[uuid.UUID, int], int]:
    async def one(id_: uuid.UUID, index: int, batches: list[Acknowledgement]) -> int:
        error = partitions.error(id_)
        name = partitions.names.get(id_)
        if error or name is None:
            return error
        return await service.partitions.acknowledge(group_id, member_id, name, index, batches)

    keys = list(acks)
    errors = await asyncio.gather(*(one(id_, index, acks[(id_, index)]) for id_, index in keys))
    return dict(zip(keys, errors, strict=True))


async def _close_session(service: ShareService, group_id: str, member_id: str) -> None:
    """A member closed its session: what it holds here goes to the others at once; the
    last session of its group here lets the group's share partitions go (their state is
    durable: a group deleted or reset meanwhile is read afresh by the next member)."""
    await service.partitions.release(group_id, member_id)
    if not service.sessions.has_group(group_id):
        service.partitions.forget_group(group_id)


def _node_endpoints(ctx: RequestContext, endpoints: dict[int, Any]) -> list[Body]:
    return [{"node_id": e.node_id, "host": e.on(ctx.listener).host,
             "port": e.on(ctx.listener).port, "rack": e.rack}
            for e in endpoints.values() if e is not None]


def _fetch_refused(body: Body, errno: int) -> Body:
    return _error_response(body, errno)


@requires(READ_GROUP, "group_id", _fetch_refused)
@declares(FETCHED_TOPICS)
async def handle_share_fetch(service: ShareService, ctx: RequestContext, body: Body) -> Body:
    group_id, member_id, epoch = body["group_id"], body["member_id"], body["share_session_epoch"]
    if not group_id or not member_id:
        return _error_response(body, InvalidRequestError.errno,
                               "a share fetch names its group and member")
    requested = [(t["topic_id"], p["partition_index"]) for t in body["topics"]
                 for p in t["partitions"]]
    acks = {(t["topic_id"], p["partition_index"]): _acknowledgements(p["acknowledgement_batches"])
            for t in body["topics"] for p in t["partitions"] if p["acknowledgement_batches"]}
    forgotten = [(t["topic_id"], index) for t in body["forgotten_topics_data"]
                 for index in t["partitions"]]
    if epoch == FINAL_EPOCH and forgotten:
        return _error_response(body, InvalidRequestError.errno,
                               "a final share fetch cannot forget partitions")
    error, session = service.sessions.fetch((group_id, member_id), epoch, requested, forgotten,
                                            acknowledging=bool(acks))
    if session is None:
        return _error_response(body, error)
    partitions = _Partitions(ctx, [*session.partitions, *acks, *forgotten])
    if epoch == OPEN_EPOCH:
        await service.partitions.refresh(group_id, [
            (name, index) for id_, index in session.partitions
            if (name := partitions.names.get(id_)) is not None])
    ack_errors = await _apply_acknowledgements(service, group_id, member_id, partitions, acks)
    released = [(name, index) for id_, index in forgotten
                if (name := partitions.names.get(id_)) is not None]
    if epoch == FINAL_EPOCH:
        await _close_session(service, group_id, member_id)
        answered = list(acks)
    else:
        if released:
            await service.partitions.release(group_id, member_id, released)
        answered = list(dict.fromkeys([*session.partitions, *acks]))
    wanted = [(partitions.names[id_], index) for id_, index in session.partitions
              if epoch != FINAL_EPOCH and not partitions.error(id_)]
    fetched = await service.partitions.fetch(
        group_id, member_id, [w for w in wanted if w[0] is not None],  # type: ignore[misc]
        max_wait_ms=0 if acks else body["max_wait_ms"], min_bytes=body["min_bytes"],
        max_bytes=body["max_bytes"], max_records=body["max_records"]) if wanted else {}
    by_topic: dict[uuid.UUID, list[Body]] = defaultdict(list)
    endpoints: dict[int, Any] = {}
    for id_, index in answered:
        name = partitions.names.get(id_)
        answer = fetched.get((name, index)) if name is not None else None
        fetch_error = partitions.error(id_) or (answer.error if answer is not None else 0)
        current, endpoint = {"leader_id": -1, "leader_epoch": -1}, None
        if fetch_error == NotLeaderOrFollowerError.errno:
            current, endpoint = _leader(ctx, name, index)
            if endpoint is not None:
                endpoints[endpoint.node_id] = endpoint
        by_topic[id_].append({
            "partition_index": index, "error_code": fetch_error, "error_message": None,
            "acknowledge_error_code": ack_errors.get((id_, index), 0),
            "acknowledge_error_message": None, "current_leader": current,
            "records": answer.records if answer is not None else b"",  # never null: librdkafka
            "acquired_records": [] if answer is None else [
                {"first_offset": r.first_offset, "last_offset": r.last_offset,
                 "delivery_count": r.delivery_count} for r in answer.acquired]})
    settings = await service.group_settings(group_id)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "acquisition_lock_timeout_ms": settings.limits.lock_duration_ms,
            "responses": [{"topic_id": id_, "partitions": parts}
                          for id_, parts in by_topic.items()],
            "node_endpoints": _node_endpoints(ctx, endpoints)}


@requires(READ_GROUP, "group_id", _fetch_refused)
@declares(FETCHED_TOPICS)
async def handle_share_acknowledge(service: ShareService, ctx: RequestContext,
                                   body: Body) -> Body:
    group_id, member_id, epoch = body["group_id"], body["member_id"], body["share_session_epoch"]
    if not group_id or not member_id:
        return _error_response(body, InvalidRequestError.errno,
                               "a share acknowledgement names its group and member")
    error = service.sessions.acknowledge((group_id, member_id), epoch)
    if error:
        return _error_response(body, error)
    acks = {(t["topic_id"], p["partition_index"]): _acknowledgements(p["acknowledgement_batches"])
            for t in body["topics"] for p in t["partitions"]}
    partitions = _Partitions(ctx, list(acks))
    errors = await _apply_acknowledgements(service, group_id, member_id, partitions, acks)
    if epoch == FINAL_EPOCH:
        await _close_session(service, group_id, member_id)
    by_topic: dict[uuid.UUID, list[Body]] = defaultdict(list)
    endpoints: dict[int, Any] = {}
    for (id_, index), code in errors.items():
        current, endpoint = {"leader_id": -1, "leader_epoch": -1}, None
        if code == NotLeaderOrFollowerError.errno:
            current, endpoint = _leader(ctx, partitions.names.get(id_), index)
            if endpoint is not None:
                endpoints[endpoint.node_id] = endpoint
        by_topic[id_].append({"partition_index": index, "error_code": code,
                              "error_message": None, "current_leader": current})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "responses": [{"topic_id": id_, "partitions": parts}
                          for id_, parts in by_topic.items()],
            "node_endpoints": _node_endpoints(ctx, endpoints)}


# ------------------------------------------------------------------ the share coordinator


def _state_refused(body: Body, errno: int) -> Body:
    """Every partition of a share state request answers the refusal."""
    return {"results": [{"topic_id": t["topic_id"], "partitions": [
        {"partition": p["partition"], "error_code": errno, "error_message": None}
        for p in t["partitions"]]} for t in body["topics"]]}


def _state_keys(body: Body) -> list[tuple[StateKey, Body]]:
    return [(StateKey(body["group_id"], t["topic_id"], p["partition"]), p)
            for t in body["topics"] for p in t["partitions"]]


def _state_results(answers: list[tuple[StateKey, Body]]) -> Body:
    by_topic: dict[uuid.UUID, list[Body]] = defaultdict(list)
    for key, answer in answers:
        by_topic[key.topic_id].append({"partition": key.partition, "error_message": None,
                                       **answer})
    return {"results": [{"topic_id": id_, "partitions": parts}
                        for id_, parts in by_topic.items()]}


def _batches(wire: list[Body]) -> list[StateBatch]:
    return [StateBatch(b["first_offset"], b["last_offset"], b["delivery_state"],
                       b["delivery_count"]) for b in wire]


@requires(CLUSTER_ACTION, deny=_state_refused)
async def handle_read_share_group_state(service: ShareService, ctx: RequestContext,
                                        body: Body) -> Body:
    answers = []
    for key, asked in _state_keys(body):
        error, state = await service.coordinator.read(key, asked["leader_epoch"])
        answers.append((key, {"error_code": error, "state_epoch": state.state_epoch,
                              "start_offset": state.start_offset, "state_batches": [
                                  {"first_offset": b.first_offset, "last_offset": b.last_offset,
                                   "delivery_state": b.delivery_state,
                                   "delivery_count": b.delivery_count}
                                  for b in state.batches]}))
    return _state_results(answers)


@requires(CLUSTER_ACTION, deny=_state_refused)
async def handle_read_share_group_state_summary(service: ShareService, ctx: RequestContext,
                                                body: Body) -> Body:
    answers = []
    for key, asked in _state_keys(body):
        error, state = await service.coordinator.read(key, asked["leader_epoch"])
        answers.append((key, {"error_code": error, "state_epoch": state.state_epoch,
                              "start_offset": state.start_offset}))
    return _state_results(answers)


@requires(CLUSTER_ACTION, deny=_state_refused)
async def handle_write_share_group_state(service: ShareService, ctx: RequestContext,
                                         body: Body) -> Body:
    answers = []
    for key, asked in _state_keys(body):
        error = await service.coordinator.write(key, asked["state_epoch"], asked["leader_epoch"],
                                                asked["start_offset"],
                                                _batches(asked["state_batches"]))
        answers.append((key, {"error_code": error}))
    return _state_results(answers)


@requires(CLUSTER_ACTION, deny=_state_refused)
async def handle_initialize_share_group_state(service: ShareService, ctx: RequestContext,
                                              body: Body) -> Body:
    answers = []
    for key, asked in _state_keys(body):
        error = await service.coordinator.initialize(key, asked["state_epoch"],
                                                     asked["start_offset"])
        answers.append((key, {"error_code": error}))
    return _state_results(answers)


@requires(CLUSTER_ACTION, deny=_state_refused)
async def handle_delete_share_group_state(service: ShareService, ctx: RequestContext,
                                          body: Body) -> Body:
    answers = []
    for key, _asked in _state_keys(body):
        answers.append((key, {"error_code": await service.coordinator.delete(key)}))
    return _state_results(answers)


# ------------------------------------------------------------------ admin


DESCRIBED_TOPICS = replace(DESCRIBE_TOPICS, when="offsets described")


@declares(DESCRIBE_GROUPS, DESCRIBED_TOPICS)
async def handle_describe_share_group_offsets(service: ShareService, ctx: RequestContext,
                                              body: Body) -> Body:
    groups = []
    for asked in body["groups"]:
        group_id = asked["group_id"]
        entry: Body = {"group_id": group_id, "topics": [], "error_code": 0,
                       "error_message": None}
        if not DESCRIBE_GROUPS.allows(ctx, group_id):
            groups.append({**entry, "error_code": GroupAuthorizationFailedError.errno})
            continue
        error = service.groups.groups.ownership.error_for(group_id)
        group = service.groups.groups.group(group_id) if not error else None
        if error or group is None:
            groups.append({**entry, "error_code": error or GroupIdNotFoundError.errno})
            continue
        if asked["topics"] is None:
            wanted = {name: sorted(ready) for name, ready in group.initialized.values()}
        else:
            wanted = {t["topic_name"]: t["partitions"] for t in asked["topics"]}
        for name, indexes in wanted.items():
            topic_entry: Body = {"topic_name": name, "topic_id": _topic_id(ctx, name),
                                 "partitions": []}
            denied = not DESCRIBED_TOPICS.allows(ctx, name)
            for index in indexes:
                partition: Body = {"partition_index": index, "start_offset": -1,
                                   "leader_epoch": -1, "error_code": 0, "error_message": None}
                if denied:
                    partition["error_code"] = TopicAuthorizationFailedError.errno
                elif ctx.broker.metadata_cache.partition(name, index) is None:
                    partition["error_code"] = UnknownTopicOrPartitionError.errno
                else:
                    key = StateKey(group_id, _topic_id(ctx, name), index)
                    code, state = await service.persister.read(key, NO_LEADER_EPOCH)
                    partition.update(error_code=code, start_offset=state.start_offset,
                                     leader_epoch=state.leader_epoch)
                topic_entry["partitions"].append(partition)
            entry["topics"].append(topic_entry)
        groups.append(entry)
    return {"throttle_time_ms": 0, "groups": groups}


ALTERED_TOPICS = replace(READ_TOPICS, when="offsets altered")


def _alter_refused(body: Body, errno: int) -> Body:
    return {"throttle_time_ms": 0, "responses": [
        {"topic_name": t["topic_name"], "topic_id": ZERO,
         "partitions": [{"partition_index": p["partition_index"], "error_code": errno,
                         "error_message": None} for p in t["partitions"]]}
        for t in body["topics"]]}


@requires(READ_GROUP, "group_id", _alter_refused)
@declares(ALTERED_TOPICS)
async def handle_alter_share_group_offsets(service: ShareService, ctx: RequestContext,
                                           body: Body) -> Body:
    """Moves an empty share group's share-partition start offsets (Kafka's
    ``kafka-share-groups.sh --reset-offsets``): the partition's state starts over there,
    under a new state epoch that fences the writes of the state it replaces."""
    group_id = body["group_id"]
    wanted = [(t["topic_name"], p["partition_index"], p["start_offset"])
              for t in body["topics"] for p in t["partitions"]]
    errors = await service.groups.alter_offsets(
        group_id, [(name, index, offset) for name, index, offset in wanted
                   if ALTERED_TOPICS.allows(ctx, name)])
    by_topic: dict[str, list[Body]] = defaultdict(list)
    for name, index, _offset in wanted:
        code = errors.get((name, index), ALTERED_TOPICS.error.errno)
        by_topic[name].append({"partition_index": index, "error_code": code,
                               "error_message": None})
    return {"throttle_time_ms": 0, "responses": [
        {"topic_name": name, "topic_id": _topic_id(ctx, name), "partitions": parts}
        for name, parts in by_topic.items()]}
