"""Share groups in the SDK (KIP-932): the :class:`ShareConsumer`, the acknowledge types and
the records it returns. See :mod:`kafkalite.share.consumer`."""

from kafkalite.share.acknowledgements import AcknowledgeType
from kafkalite.share.consumer import AcknowledgementCallback, ShareConsumer
from kafkalite.share.fetcher import ShareRecord

__all__ = ["AcknowledgeType", "AcknowledgementCallback", "ShareConsumer", "ShareRecord"]
