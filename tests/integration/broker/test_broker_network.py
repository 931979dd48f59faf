"""Connection-level behaviour: ApiVersions negotiation and which bad requests close what."""

from __future__ import annotations

import struct

from kafkalite.protocol import SUPPORTED_VERSIONS, ApiKey, decode_response
from kafkalite_server.security.api_checks import declares

CORE_KEYS = {ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA,
             ApiKey.API_VERSIONS, ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS,
             ApiKey.INIT_PRODUCER_ID, ApiKey.OFFSET_FOR_LEADER_EPOCH,
             ApiKey.DESCRIBE_CONFIGS, ApiKey.CREATE_PARTITIONS}


def _metadata_ok(wire, cluster) -> bool:
    client = wire(cluster.bootstrap_servers)
    return client.call(ApiKey.METADATA, 1, {"topics": []})["brokers"] != []


def test_api_versions_lists_registered_keys_with_supported_ranges(cluster, wire):
    client = wire(cluster.bootstrap_servers)
    for version in (0, 1, 2, 3, 4):
        body = {"client_software_name": "wire", "client_software_version": "1"}
        response = client.call(ApiKey.API_VERSIONS, version, body)
        assert response["error_code"] == 0
        listed = {e["api_key"]: (e["min_version"], e["max_version"])
                  for e in response["api_keys"]}
        assert set(listed) >= CORE_KEYS
        assert response["api_keys"] == cluster.brokers[0].handlers.advertised()
        for key, (low, high) in listed.items():
            assert (low, high) == SUPPORTED_VERSIONS[ApiKey(key)]
        assert [e["api_key"] for e in response["api_keys"]] == sorted(listed)


def test_api_versions_above_max_gets_error_35_in_v0_format(cluster, wire):
    client = wire(cluster.bootstrap_servers)
    # ApiVersions v9: header v2 (client id, empty tag buffer), body we do not parse.
    payload = struct.pack(">hhi", ApiKey.API_VERSIONS, 9, 77) + struct.pack(">h", 1) + b"x"
    payload += b"\x00" + b"\x02a\x021\x00"
    client.send_raw(struct.pack(">i", len(payload)) + payload)
    correlation_id, body = decode_response(ApiKey.API_VERSIONS, 0, client.receive_frame())
    assert correlation_id == 77
    assert body["error_code"] == 35
    assert body["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 4}]
    # The connection stays usable: the client retries at a version we serve.
    assert client.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == 0


def test_unknown_api_key_closes_only_that_connection(cluster, wire):
    bad = wire(cluster.bootstrap_servers)
    bystander = wire(cluster.bootstrap_servers)
    payload = struct.pack(">hhih", 999, 0, 5, 1) + b"x"
    bad.send_raw(struct.pack(">i", len(payload)) + payload)
    assert bad.is_closed_by_peer()
    assert bystander.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == 0
    assert _metadata_ok(wire, cluster)


def test_unsupported_version_of_another_api_closes_the_connection(cluster, wire):
    client = wire(cluster.bootstrap_servers)
    payload = struct.pack(">hhih", ApiKey.METADATA, 42, 5, 1) + b"x" + b"\x00\x00\x00\x00"
    client.send_raw(struct.pack(">i", len(payload)) + payload)
    assert client.is_closed_by_peer()
    assert _metadata_ok(wire, cluster)


def test_malformed_body_closes_the_connection(cluster, wire):
    client = wire(cluster.bootstrap_servers)
    # Metadata v1 whose topics array claims 5 entries but has none.
    payload = struct.pack(">hhih", ApiKey.METADATA, 1, 5, 1) + b"x" + struct.pack(">i", 5)
    client.send_raw(struct.pack(">i", len(payload)) + payload)
    assert client.is_closed_by_peer()
    assert _metadata_ok(wire, cluster)


def test_oversize_frame_closes_only_that_connection(cluster_factory, wire):
    cluster = cluster_factory(socket_request_max_bytes="1024")
    big = wire(cluster.bootstrap_servers)
    bystander = wire(cluster.bootstrap_servers)
    big.send_raw(struct.pack(">i", 4096) + b"\x00" * 64)
    assert big.is_closed_by_peer()
    assert bystander.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == 0


def test_pipelined_requests_are_answered_in_order(cluster, wire):
    client = wire(cluster.bootstrap_servers)
    sent = [client.send(ApiKey.METADATA, 8, {"topics": None,
                                             "allow_auto_topic_creation": False})
            if i % 2 else client.send(ApiKey.API_VERSIONS, 0, {}) for i in range(10)]
    received = [client.receive(ApiKey.METADATA if i % 2 else ApiKey.API_VERSIONS,
                               8 if i % 2 else 0)[0] for i in range(10)]
    assert received == sent


def test_a_registered_handler_is_advertised_and_served(cluster, wire):
    client = wire(cluster.bootstrap_servers)
    broker = cluster.brokers[0]
    listed = {e["api_key"] for e in client.call(ApiKey.API_VERSIONS, 0, {})["api_keys"]}
    assert ApiKey.SASL_HANDSHAKE not in listed

    @declares(open_because="a stand-in for the test")
    async def sasl_handshake(ctx, body):
        return {"error_code": 33, "mechanisms": []}

    async def register() -> None:
        broker.handlers.register(ApiKey.SASL_HANDSHAKE, sasl_handshake)

    cluster.call(register())
    listed = {e["api_key"] for e in client.call(ApiKey.API_VERSIONS, 0, {})["api_keys"]}
    assert ApiKey.SASL_HANDSHAKE in listed
    response = client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert response == {"error_code": 33, "mechanisms": []}


def test_handler_crash_gets_unknown_server_error_and_the_broker_keeps_serving(cluster, wire):
    broker = cluster.brokers[0]

    @declares(open_because="a stand-in for the test")
    async def broken(ctx, body):
        raise RuntimeError("boom")

    async def register() -> None:
        broker.handlers.register(ApiKey.INIT_PRODUCER_ID, broken)
        broker.handlers.register(ApiKey.DELETE_TOPICS, broken)

    cluster.call(register())
    client = wire(cluster.bootstrap_servers)
    response = client.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None,
                                                        "transaction_timeout_ms": 1})
    assert response["error_code"] == -1
    client.send(ApiKey.DELETE_TOPICS, 3, {"topic_names": ["x"], "timeout_ms": 1})
    assert client.is_closed_by_peer()  # no top-level error code to carry the failure
    assert _metadata_ok(wire, cluster)
