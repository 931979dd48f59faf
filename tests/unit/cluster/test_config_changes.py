"""AlterConfigs / IncrementalAlterConfigs semantics: replace, edit, lists, duplicates."""

from __future__ import annotations

import pytest

from kafkalite.protocol.errors import InvalidConfigError, InvalidRequestError
from kafkalite_server.cluster.config_changes import AlterOp, ConfigEdit, edited, replaced

LISTS = {"cleanup.policy": "delete"}


def test_alter_configs_replaces_everything_and_the_last_duplicate_wins() -> None:
    assert replaced([("retention.ms", "1"), ("message.format.version", "3.0-IV1"),
                     ("message.format.version", "0.10.0.0")]) == {
        "retention.ms": "1", "message.format.version": "0.10.0.0"}
    with pytest.raises(InvalidRequestError, match=r"retention\.ms"):
        replaced([("retention.ms", None)])


def test_incremental_edits_start_from_the_current_overrides_or_kafkas_default_list() -> None:
    current = {"retention.ms": "1", "flush.ms": "5"}
    result = edited(current, [ConfigEdit("flush.ms", AlterOp.DELETE, None),
                              ConfigEdit("cleanup.policy", AlterOp.APPEND, "compact"),
                              ConfigEdit("segment.ms", AlterOp.SET, "100")], LISTS)
    assert result == {"retention.ms": "1", "cleanup.policy": "delete,compact",
                      "segment.ms": "100"}
    assert edited(result, [ConfigEdit("cleanup.policy", AlterOp.SUBTRACT, "delete")],
                  LISTS)["cleanup.policy"] == "compact"


def test_incremental_refusals_follow_kafka() -> None:
    with pytest.raises(InvalidRequestError, match="duplicate"):
        edited({}, [ConfigEdit("a", AlterOp.SET, "1"), ConfigEdit("a", AlterOp.DELETE, None)],
               LISTS)
    with pytest.raises(InvalidConfigError, match=r"retention\.ms"):
        edited({}, [ConfigEdit("retention.ms", AlterOp.APPEND, "1")], LISTS)
