"""The broker's storage engine: segmented partition logs with sparse offset/time indexes.

``LogManager`` owns every partition ``Log`` of a broker; a ``Log`` is a run of
``LogSegment`` files, each with its ``OffsetIndex`` and ``TimeIndex``. Fetches get
``FileRegion`` values to ``sendfile`` from.
"""

from kafkalite_server.log.config import TOPIC_CONFIG_KEYS, LogConfig
from kafkalite_server.log.file_region import FileRegion
from kafkalite_server.log.log import AppendInfo, Log
from kafkalite_server.log.manager import LogManager

__all__ = ["TOPIC_CONFIG_KEYS", "AppendInfo", "FileRegion", "Log", "LogConfig", "LogManager"]
