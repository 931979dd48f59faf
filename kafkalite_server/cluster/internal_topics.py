"""Internal topics: the broker keeps its own state in them, so clients may not break them.

``__consumer_offsets`` holds every group's committed offsets and ``__transaction_state``
is reserved by name for the transaction coordinator. Deleting one, or adding partitions to
it (which moves every group to another partition, see ``coordinator.hashing``), silently loses
that state; so does creating one with a client's settings before the broker creates it with
its own. The admin handlers refuse all three with INVALID_REQUEST and a message naming the
topic, whoever asks (a super user too): the refusal is about what is asked, not who asks,
hence INVALID_REQUEST where Kafka answers some of these requests with
TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging

from kafkalite.protocol.errors import InvalidRequestError
from kafkalite_server.group.config import OFFSETS_TOPIC

TRANSACTION_STATE_TOPIC = "__transaction_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})

log = logging.getLogger(__name__)


def refuse_if_internal(name: str, action: str) -> None:
    """Raise InvalidRequestError when ``action`` (e.g. "delete") targets an internal topic."""
    if name in INTERNAL_TOPICS:
        message = (f"cannot {action} {name!r}: it is an internal topic that holds the "
                   "broker's own state")
        log.warning("refused a request: %s", message)  # DeleteTopics v0-4 carry no message
        raise InvalidRequestError(message)


def internal_replication_factor(topic: str, key: str, wanted: int, live_brokers: int) -> int:
    """The replication factor to create an internal topic with: ``wanted`` (the ``key``
    setting), capped at the brokers alive now so a cluster smaller than the setting still
    works. Kafka refuses to create the topic instead; here a warning says the topic is less
    durable than asked, and it keeps that replication factor after more brokers join."""
    if 0 < live_brokers < wanted:
        log.warning("creating %s with replication factor %d: only %d brokers are live "
                    "(%s is %d)", topic, live_brokers, live_brokers, key, wanted)
        return live_brokers
    return wanted
