"""DescribeConfigs and (Incremental)AlterConfigs as pure pairs, their routing, and the
carry-over and reset rules computed from DescribeConfigs entries."""

from __future__ import annotations

from typing import Any

import pytest

from kafkalite.admin.configs import (
    AlterConfigOp,
    AlterConfigs,
    ConfigResource,
    DescribeConfigs,
    ResourceBroker,
    by_resource_type,
    config_entries,
    is_default,
    modified_configs,
    reset_changes,
    resource_keys,
    unknown_keys,
    with_other_modified,
)
from kafkalite.protocol import ApiKey
from kafkalite.protocol.config_codes import ConfigResourceType, ConfigSourceType
from kafkalite.protocol.errors import InvalidConfigError, NotControllerError
from tests.unit.admin.fakes import FakeCluster

TOPIC = ConfigResource("topic", "orders")
BROKER = ConfigResource("BROKER", "2")
DEFAULTS = ConfigResource(ConfigResourceType.BROKER, "")


def entry(name: str, value: str | None, source: int, read_only: bool = False) -> dict[str, Any]:
    return {"name": name, "value": value, "read_only": read_only, "config_source": source,
            "is_sensitive": False, "synonyms": []}


def test_a_broker_resource_goes_to_its_broker_the_others_to_any() -> None:
    keys = resource_keys([TOPIC, BROKER, DEFAULTS])
    found = ResourceBroker().lookup(keys, FakeCluster(brokers=[3, 1]))
    assert found.mapped == {keys[0]: 1, keys[1]: 2, keys[2]: 1}
    assert ResourceBroker().lookup(keys[:1], FakeCluster(brokers=[])).unmapped


def test_a_broker_resource_not_named_by_an_id_is_refused_before_sending() -> None:
    with pytest.raises(ValueError, match="named by its broker id, not 'main'"):
        resource_keys([ConfigResource("broker", "main")])
    with pytest.raises(ValueError, match="resource_type must be one of"):
        ConfigResource("table", "x")


def test_describe_configs_pair_with_a_refused_resource() -> None:
    handler = DescribeConfigs(include_synonyms=True)
    keys = resource_keys([TOPIC, ConfigResource("topic", "gone")])
    request = handler.build_request(1, keys)
    assert request.api_key is ApiKey.DESCRIBE_CONFIGS
    assert request.body == {"resources": [
        {"resource_type": 2, "resource_name": "orders", "configuration_keys": None},
        {"resource_type": 2, "resource_name": "gone", "configuration_keys": None}],
        "include_synonyms": True, "include_documentation": False}
    outcome = handler.handle_response(1, keys, {"results": [
        {"error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "orders",
         "configs": [entry("retention.ms", "1000", 1)]},
        {"error_code": 3, "error_message": "no such topic", "resource_type": 2,
         "resource_name": "gone", "configs": []}]})
    assert outcome.completed == {keys[0]: [entry("retention.ms", "1000", 1)]}
    assert "(describing topic 'gone': no such topic)" in str(outcome.failed[keys[1]])


def test_incremental_alter_configs_sends_each_operation() -> None:
    resource = ConfigResource("topic", "orders", configs={
        "retention.ms": "1000", "cleanup.policy": (AlterConfigOp.APPEND, "compact"),
        "segment.ms": ("delete", "ignored")})
    handler = AlterConfigs(incremental=True, validate_only=True)
    assert handler.api_key is ApiKey.INCREMENTAL_ALTER_CONFIGS
    assert handler.build_request(0, resource_keys([resource])).body == {"resources": [
        {"resource_type": 2, "resource_name": "orders", "configs": [
            {"name": "retention.ms", "config_operation": 0, "value": "1000"},
            {"name": "cleanup.policy", "config_operation": 2, "value": "compact"},
            {"name": "segment.ms", "config_operation": 1, "value": None}]}],
        "validate_only": True}


def test_alter_configs_can_only_set() -> None:
    assert AlterConfigs(incremental=False, validate_only=False).api_key is ApiKey.ALTER_CONFIGS
    resource = ConfigResource("topic", "orders", configs={"x": (AlterConfigOp.DELETE, None)})
    with pytest.raises(ValueError, match="AlterConfigs can only SET; DELETE needs "
                                         "incremental=True"):
        config_entries(resource, incremental=False)
    with pytest.raises(TypeError, match="configs must map keys"):
        config_entries(ConfigResource("topic", "t", configs=["x"]), incremental=True)


def test_alter_answers_are_ok_or_the_error_text_and_routing_errors_retry() -> None:
    handler = AlterConfigs(incremental=True, validate_only=False)
    keys = resource_keys([TOPIC, ConfigResource("topic", "bad"), BROKER])
    outcome = handler.handle_response(0, keys, {"responses": [
        {"error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "orders"},
        {"error_code": InvalidConfigError.errno, "error_message": "retention.ms: -7",
         "resource_type": 2, "resource_name": "bad"},
        {"error_code": NotControllerError.errno, "error_message": None, "resource_type": 4,
         "resource_name": "2"}]})
    assert outcome.completed[keys[0]].text() == "OK"
    assert outcome.completed[keys[1]].error_code == InvalidConfigError.errno
    assert "InvalidConfigError" in outcome.completed[keys[1]].text()
    assert "retention.ms: -7" in outcome.completed[keys[1]].text()
    assert list(outcome.look_up_again) == [keys[2]]
    assert by_resource_type(outcome.completed) == {
        "topic": {"orders": "OK", "bad": outcome.completed[keys[1]].text()}}


def test_own_settings_are_carried_over_and_reset_by_source() -> None:
    entries = [entry("retention.ms", "1000", ConfigSourceType.DYNAMIC_TOPIC_CONFIG),
               entry("cleanup.policy", "delete", ConfigSourceType.DEFAULT_CONFIG),
               entry("segment.ms", "5", ConfigSourceType.DYNAMIC_TOPIC_CONFIG),
               entry("max.message.bytes", "9", ConfigSourceType.STATIC_BROKER_CONFIG)]
    modified = modified_configs(TOPIC, entries)
    assert modified == {"retention.ms": "1000", "segment.ms": "5"}
    change = ConfigResource("topic", "orders", configs={"segment.ms": "6"})
    assert with_other_modified(change, modified).configs == {"retention.ms": "1000",
                                                             "segment.ms": "6"}
    reset = ConfigResource("topic", "orders", configs=["segment.ms"])
    assert reset_changes(reset, modified, incremental=True).configs == {
        "segment.ms": (AlterConfigOp.DELETE, None)}
    assert reset_changes(reset, modified, incremental=False).configs == {"retention.ms": "1000"}
    assert reset_changes(TOPIC, modified, incremental=True).configs == {
        "retention.ms": (AlterConfigOp.DELETE, None), "segment.ms": (AlterConfigOp.DELETE, None)}
    assert [is_default(e) for e in entries] == [False, True, False, False]
    assert is_default({"name": "x", "value": "1", "is_default": True})


def test_the_cluster_wide_broker_default_is_its_own_source() -> None:
    entries = [entry("log.retention.ms", "5", ConfigSourceType.DYNAMIC_DEFAULT_BROKER_CONFIG),
               entry("log.segment.ms", "6", ConfigSourceType.DYNAMIC_BROKER_CONFIG)]
    assert modified_configs(DEFAULTS, entries) == {"log.retention.ms": "5"}
    assert modified_configs(BROKER, entries) == {"log.segment.ms": "6"}


def test_unknown_keys_are_those_without_a_changeable_config() -> None:
    entries = [entry("retention.ms", "1", 1), entry("log.dirs", "/d", 4, read_only=True)]
    resource = ConfigResource("topic", "orders", configs={"retention.ms": "2", "log.dirs": "x",
                                                          "retention.msec": "3"})
    assert unknown_keys(resource, entries) == ["log.dirs", "retention.msec"]
