"""Deprecated: the transaction tooling moved to :mod:`kafkalite.admin.transactions`.

Importing this module still works and gives the same objects, with a DeprecationWarning.
"""

from __future__ import annotations

import warnings

from kafkalite.admin.transactions import (
    CLOSED_STATES,
    HANGING_SLACK_MS,
    AbortTransactionSpec,
    PartitionProducerState,
    ProducerState,
    TransactionDescription,
    TransactionListing,
    TransactionState,
    hanging,
)

__all__ = [
    "CLOSED_STATES",
    "HANGING_SLACK_MS",
    "AbortTransactionSpec",
    "PartitionProducerState",
    "ProducerState",
    "TransactionDescription",
    "TransactionListing",
    "TransactionState",
    "hanging",
]

warnings.warn("kafkalite.admin_transactions is deprecated: import from kafkalite.admin "
              "(or kafkalite.admin.transactions)", DeprecationWarning, stacklevel=2)
