"""kafka-python's ``kafka.partitioner`` names, for programs migrating from it.

kafkalite's :class:`DefaultPartitioner` is the Java client's: murmur2 on the key (the same
partition as kafka-python and Java for the same key) and, for records without a key, one
partition per batch ("sticky"), which is what kafka-python's ``StickyPartitioner`` does; so
both names are that class. kafka-python's ``DefaultPartitioner`` spreads key-less records at
random instead; :class:`~kafkalite.producer.RandomPartitioner` does that.
"""

from kafkalite.producer.partitioners import DefaultPartitioner, Partitioner, murmur2

StickyPartitioner = DefaultPartitioner

__all__ = ["DefaultPartitioner", "Partitioner", "StickyPartitioner", "murmur2"]
