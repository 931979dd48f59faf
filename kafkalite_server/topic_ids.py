"""Topic ids: the UUID that Metadata v10+ reports for each topic, and that the share-group
APIs (ShareGroupHeartbeat's assignment, ShareFetch, ShareAcknowledge, the share state
records) name topics by.

Kafka draws a random id when a topic is created and keeps it with the topic. kafkalite
derives it instead, from the cluster id and the topic's name (a name-based UUID, version
5), so every broker of a cluster gives the same id to the same topic without anything
stored or sent between them. The one difference a client can see: a topic deleted and
created again under the same name keeps its id (Kafka gives it a new one); the state a
share group keeps for a topic is removed when the topic is deleted, so nothing of the old
topic applies to the new one.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable

_NAMESPACE = uuid.UUID("6b61666b-616c-6974-6520-746f70696373")
"""The namespace of kafkalite's topic ids (any fixed UUID: it only has to never change)."""
ZERO = uuid.UUID(int=0)
"""Kafka's "no topic id" (a topic asked for by name that does not exist)."""


@functools.lru_cache(maxsize=1 << 16)
def topic_id(cluster_id: str, topic: str) -> uuid.UUID:
    """The id of ``topic`` in the cluster ``cluster_id``; never :data:`ZERO`. Remembered:
    every share fetch names its topics by id."""
    return uuid.uuid5(_NAMESPACE, f"{cluster_id}/{topic}")


def topic_named(cluster_id: str, id_: uuid.UUID, topics: Iterable[str]) -> str | None:
    """The topic among ``topics`` (the cluster's topics now) whose id is ``id_``."""
    for topic in topics:
        if topic_id(cluster_id, topic) == id_:
            return topic
    return None
