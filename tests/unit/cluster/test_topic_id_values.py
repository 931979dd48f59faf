"""Topic ids (KIP-516): their text form and their place in the topic's assignment node."""

from __future__ import annotations

import json
import uuid

import pytest

from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.topic_ids import (
    METADATA_TOPIC_ID,
    ZERO,
    legacy_topic_id,
    new_topic_id,
    uuid_from_text,
    uuid_text,
)


def test_the_text_form_is_kafkas_uuid_to_string() -> None:
    assert uuid_text(METADATA_TOPIC_ID) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert uuid_from_text("AAAAAAAAAAAAAAAAAAAAAQ") == METADATA_TOPIC_ID
    with pytest.raises(ValueError, match="not 16"):
        uuid_from_text("AAAA")
    with pytest.raises(ValueError, match="base64"):
        uuid_from_text("A")


def test_new_ids_are_random_and_never_reserved_or_dash_led() -> None:
    ids = {new_topic_id() for _ in range(200)}
    assert len(ids) == 200
    assert not ids & {ZERO, METADATA_TOPIC_ID}
    assert not any(uuid_text(id_).startswith("-") for id_ in ids)


def test_a_legacy_id_is_the_name_based_one_reported_before_ids_were_stored() -> None:
    assert legacy_topic_id("c1", "orders") == uuid.uuid5(
        uuid.UUID("6b61666b-616c-6974-6520-746f70696373"), "c1/orders")
    assert legacy_topic_id("c1", "orders") != legacy_topic_id("c2", "orders")


def test_the_assignment_node_holds_the_id_as_kafka_2_8_writes_it() -> None:
    topic_id = new_topic_id()
    data = layout.encode_assignment({0: [1, 2]}, topic_id=topic_id)
    assert json.loads(data) == {"version": 3, "topic_id": uuid_text(topic_id),
                                "partitions": {"0": [1, 2]}, "adding_replicas": {},
                                "removing_replicas": {}}
    assert layout.decode_topic_id("t", data) == topic_id
    assert layout.decode_assignment("t", data) == {0: [1, 2]}
    moving = layout.encode_assignment({0: [3, 1]}, {0: [3]}, {0: [1]}, topic_id=topic_id)
    assert layout.decode_reassigning("t", moving) == ({0: [3]}, {0: [1]})
    assert layout.decode_topic_id("t", moving) == topic_id


def test_a_node_from_before_ids_has_none_and_a_bad_id_is_a_layout_error() -> None:
    assert layout.decode_topic_id("t", b'{"version":1,"partitions":{"0":[1]}}') is None
    with pytest.raises(layout.LayoutError, match="/brokers/topics/t"):
        layout.decode_topic_id("t", b'{"version":3,"topic_id":"nope","partitions":{}}')
