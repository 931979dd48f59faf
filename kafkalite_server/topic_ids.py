"""Topic ids (KIP-516): the UUID that tells a topic from an earlier one of the same name.

As Kafka does, a topic gets a random id when it is created; the id is written into its
assignment node (``/brokers/topics/<t>``, field ``topic_id``), goes to every broker with
the partition states the controller sends, and into ``partition.metadata`` in each of the
topic's partition directories. A topic deleted and created again under the same name gets
a new id, so a client (Metadata v10+, Fetch v13+) or a broker (a log directory left from
the deleted topic) can tell the two apart.

A topic created before ids were stored gets one from the controller, once, when it first
loads the topic: :func:`legacy_topic_id`, the name-based id kafkalite reported for it
before, so the consumer-group and share-group records that already name the topic by that
id stay valid. Every topic created since gets a random one.

The text form is Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, unpadded.
"""

from __future__ import annotations

import base64
import binascii
import uuid

from kafkalite.protocol.primitives import ZERO_UUID as ZERO

METADATA_TOPIC_ID = uuid.UUID(int=1)
"""Kafka reserves this id for its KRaft metadata topic: never given to a topic."""
_LEGACY_NAMESPACE = uuid.UUID("6b61666b-616c-6974-6520-746f70696373")
"""The namespace of the name-based ids of topics created before ids were stored."""


def _usable(id_: uuid.UUID) -> bool:
    """Not reserved, and (as Kafka's ``Uuid.randomUuid`` requires) a text form that does
    not start with '-', which command-line tools would read as an option."""
    return id_ not in (ZERO, METADATA_TOPIC_ID) and not uuid_text(id_).startswith("-")


def new_topic_id() -> uuid.UUID:
    """A random id for a new topic."""
    while True:
        id_ = uuid.uuid4()
        if _usable(id_):
            return id_


def legacy_topic_id(cluster_id: str, topic: str) -> uuid.UUID:
    """The id of a topic created before ids were stored (what kafkalite reported for it
    then: a name-based UUID, version 5); never :data:`ZERO`."""
    return uuid.uuid5(_LEGACY_NAMESPACE, f"{cluster_id}/{topic}")


def uuid_text(id_: uuid.UUID) -> str:
    """``id_`` as Kafka's ``Uuid.toString`` writes it."""
    return base64.urlsafe_b64encode(id_.bytes).decode().rstrip("=")


def uuid_from_text(text: str) -> uuid.UUID:
    """The id :func:`uuid_text` wrote; ValueError names a text that is not one."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise ValueError(f"{text!r} is not a base64 topic id") from None
    if len(raw) != 16:
        raise ValueError(f"{text!r} is not a topic id: {len(raw)} bytes, not 16")
    return uuid.UUID(bytes=raw)
