"""Every name importable from the single-module ``kafkalite.admin`` stays importable from the
package: its own names as they were, the names it only imported with a DeprecationWarning;
``kafkalite.admin_transactions`` likewise; and the hanging-transaction rule on its own."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

import kafkalite
import kafkalite.admin as admin
from kafkalite.admin.transactions import (
    HANGING_SLACK_MS,
    TransactionDescription,
    TransactionState,
    hanging,
)
from kafkalite.structs import TopicPartition

PUBLIC = ["ACL", "ACLFilter", "ACLOperation", "ACLPermissionType", "ACLResourcePatternType",
          "AbortTransactionSpec", "AdminClient", "AlterConfigOp", "BrokerVersionData",
          "ConfigChanges", "ConfigResource", "ConfigResourceType", "ConfigSourceType",
          "ConfigType", "ElectionType", "GroupDescription", "GroupListing", "GroupState",
          "GroupType", "KafkaAdminClient", "MemberDescription", "MemberToRemove",
          "NewPartitions", "NewTopic", "OffsetAndMetadata", "OffsetAndTimestamp", "OffsetSpec",
          "OffsetTimestamp", "PartitionMetadata", "PartitionProducerState", "ProducerState",
          "ResourcePattern", "ResourcePatternFilter", "ResourceType", "ScramMechanism",
          "TopicDescription", "TopicPartition", "TransactionDescription", "TransactionListing",
          "TransactionState", "UNSENT_ADMIN_APIS", "UpdateFeatureType",
          "UserScramCredentialDeletion", "UserScramCredentialUpsertion"]
"""The admin module's own names before it became a package."""

MOVED = ["ApiKey", "BrokerResponseError", "ElectionNotNeededError", "KafkaClient",
         "KafkaError", "KafkaTimeoutError", "LATEST", "NoError", "NotControllerError",
         "NotLeaderOrFollowerError", "PROTOCOL_TYPE", "ProtocolDecodeError", "TRANSACTION_KEY",
         "UnknownTopicOrPartitionError", "UnsupportedVersionError", "assignment_from_wire",
         "client_metrics", "error_for_code", "fetch_committed_offsets", "find_coordinator",
         "list_offsets", "salted_password", "txn"]
"""Names the module imported for its own use, which a program could import from it."""


@pytest.mark.parametrize("name", PUBLIC)
def test_the_admin_modules_names_are_still_there(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert getattr(admin, name) is not None
    assert name in admin.__all__


@pytest.mark.parametrize("name", MOVED)
def test_names_it_only_imported_still_work_with_a_deprecation_warning(name: str) -> None:
    with pytest.warns(DeprecationWarning, match=f"kafkalite.admin.{name} is deprecated"):
        assert getattr(admin, name) is not None
    assert name not in admin.__all__


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        admin.Nope  # noqa: B018


def test_the_top_level_names_are_the_packages() -> None:
    assert kafkalite.AdminClient is admin.AdminClient is admin.KafkaAdminClient
    assert kafkalite.NewTopic is admin.NewTopic
    assert kafkalite.OffsetSpec is admin.OffsetSpec


def test_the_old_transactions_module_warns_and_gives_the_same_objects() -> None:
    sys.modules.pop("kafkalite.admin_transactions", None)
    with pytest.warns(DeprecationWarning, match="kafkalite.admin_transactions is deprecated"):
        old = importlib.import_module("kafkalite.admin_transactions")
    assert old.HANGING_SLACK_MS == HANGING_SLACK_MS
    assert old.TransactionState is TransactionState
    assert old.AbortTransactionSpec is admin.AbortTransactionSpec


def described(state: TransactionState, started_ms: int) -> TransactionDescription:
    return TransactionDescription(1, state, 7, 0, 60000, started_ms,
                                  {TopicPartition("orders", 0)})


def test_a_transaction_hangs_once_older_than_the_timeout_plus_the_slack() -> None:
    now = 10_000_000
    timeout = 60_000
    descriptions = {
        "young": described(TransactionState.ONGOING, now - timeout - HANGING_SLACK_MS + 1),
        "old": described(TransactionState.ONGOING, now - timeout - HANGING_SLACK_MS),
        "done": described(TransactionState.COMPLETE_COMMIT, 0),
        "unstarted": described(TransactionState.ONGOING, -1),
    }
    assert hanging(descriptions, now, timeout) == [{
        "transactional_id": "old", "producer_id": 7, "producer_epoch": 0, "state": "Ongoing",
        "age_ms": timeout + HANGING_SLACK_MS, "coordinator_id": 1,
        "topic_partitions": [TopicPartition("orders", 0)]}]
