"""Kafka's config codes, as DescribeConfigs and the Alter*Configs APIs carry them on the wire.

One definition for both sides: the AdminClient exposes these enums under kafka-python's
names (``kafka.admin.ConfigResourceType`` and friends), and the broker describes its
configs with the same values.
"""

from __future__ import annotations

from enum import IntEnum


class ConfigResourceType(IntEnum):
    """What a config belongs to."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigSourceType(IntEnum):
    """Where a described config value comes from (DescribeConfigs v1+'s config_source)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    DYNAMIC_CLIENT_METRICS_CONFIG = 7
    DYNAMIC_GROUP_CONFIG = 8


class ConfigType(IntEnum):
    """A config's value type (DescribeConfigs v3+'s config_type)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9
