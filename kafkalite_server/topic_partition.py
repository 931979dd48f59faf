"""The broker's key of a partition: ``(topic, index)``.

A plain tuple rather than a class, because every partition map in the broker is keyed by it
and requests name partitions as (topic, index) pairs; defined once so the modules that
share those maps cannot drift apart. (The group coordinator's offset records use a named
tuple of the same shape, which compares and hashes equal.)
"""

TopicPartition = tuple[str, int]
