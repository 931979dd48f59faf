"""Internal topics: the broker keeps its own state in them, so clients may not break them.

``__consumer_offsets`` holds every group's committed offsets and ``__transaction_state``
is reserved by name for the transaction coordinator. Deleting one, or adding partitions to
it (which moves every group to another partition, see ``group.hashing``), silently loses
that state; so does creating one with a client's settings before the broker creates it with
its own. The admin handlers refuse all three with INVALID_REQUEST and a message naming the
topic. Kafka answers some of these requests with TOPIC_AUTHORIZATION_FAILED; kafkalite has
no ACLs, and the refusal is about what is asked, not who asks, hence INVALID_REQUEST.
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
