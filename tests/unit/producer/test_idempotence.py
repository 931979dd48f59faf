"""The idempotent producer's identity and sequence state machine (no sockets)."""

from __future__ import annotations

import pytest

from kafkalite.producer.idempotence import (
    NO_IDENTITY,
    TRANSITIONS,
    Event,
    IdempotenceState,
    Identity,
    IllegalTransitionError,
    State,
)
from kafkalite.structs import TopicPartition

A = TopicPartition("t", 0)
B = TopicPartition("t", 1)


def ready(producer_id: int = 7, epoch: int = 0) -> IdempotenceState:
    state = IdempotenceState()
    body = state.request_body(4)
    assert (body["producer_id"], body["producer_epoch"]) == (-1, -1)
    state.identity_received(producer_id, epoch)
    assert state.ready
    return state


def test_sequences_advance_per_partition_and_wrap():
    state = ready()
    assert state.stamp(A, 3) == (7, 0, 0)
    assert state.stamp(A, 2) == (7, 0, 3)
    assert state.stamp(B, 1) == (7, 0, 0)
    state._partitions[A].next = 2**31 - 1
    assert state.stamp(A, 2) == (7, 0, 2**31 - 1)
    assert state.stamp(A, 1) == (7, 0, 1)


def test_failed_batch_bumps_the_epoch_and_every_partition_starts_over():
    state = ready()
    state.stamp(A, 3)
    state.stamp(B, 4)
    state.batch_failed(7, 0)
    assert state.state is State.BUMP_REQUIRED and not state.ready and state.needs_request
    state.batch_failed(7, 0)  # a second failure of the same identity: still one bump
    body = state.request_body(4)
    assert (body["producer_id"], body["producer_epoch"]) == (7, 0)
    assert state.state is State.BUMPING and not state.needs_request
    state.batch_failed(7, 0)  # a batch of the identity being bumped: nothing more
    state.identity_received(7, 1)
    assert state.ready and state.bumps == 1
    assert state.stamp(A, 1) == (7, 1, 0)
    assert state.stamp(B, 1) == (7, 1, 0)
    state.batch_failed(7, 0)  # a stale identity's failure needs no bump
    assert state.ready


def test_old_broker_or_fenced_bump_falls_back_to_a_fresh_id():
    state = ready()
    state.batch_failed(7, 0)
    body = state.request_body(2)  # InitProducerId v2 cannot carry the identity
    assert (body["producer_id"], body["producer_epoch"]) == (-1, -1)
    assert state.state is State.INITIALIZING
    state.identity_received(9, 0)
    assert state.identity == Identity(9, 0) and state.bumps == 1

    state.batch_failed(9, 0)
    state.request_body(4)
    state.request_failed(retriable=False, fenced=True)
    assert state.state is State.NO_ID
    assert state.request_body(4)["producer_id"] == -1


def test_retriable_failures_retry_and_others_are_fatal():
    state = IdempotenceState()
    state.request_body(4)
    state.request_failed(retriable=True)
    assert state.state is State.NO_ID
    state.request_body(4)
    state.request_failed(retriable=False)
    assert state.state is State.FATAL and state.identity == NO_IDENTITY
    state.batch_failed(-1, -1)
    assert state.state is State.FATAL

    bumping = ready()
    bumping.batch_failed(7, 0)
    bumping.request_body(4)
    bumping.request_failed(retriable=True)
    assert bumping.state is State.BUMP_REQUIRED


def test_every_state_absorbs_a_failed_batch_and_illegal_events_raise():
    assert {s for s, e in TRANSITIONS if e is Event.SEQUENCE_UNKNOWN} == set(State)
    state = ready()
    with pytest.raises(IllegalTransitionError):
        state.request_body(4)  # nothing to ask for while ready
    with pytest.raises(IllegalTransitionError):
        state.identity_received(1, 0)  # an answer nobody asked for
