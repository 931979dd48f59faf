"""Topic administration as kafka-python's admin docs show it: create, list, describe configs
with ConfigResource('TOPIC', ...), add partitions, describe the cluster, delete; typed errors."""

import json
import sys

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.errors import InvalidPartitionsError, TopicAlreadyExistsError

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC = f"{PREFIX}-inventory"

admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP, client_id="inventory-admin",
                         connections_max_idle_ms=60000)
admin.create_topics([NewTopic(TOPIC, num_partitions=2, replication_factor=1,
                              topic_configs={"retention.ms": "3600000"})])
errors = []
try:
    admin.create_topics([NewTopic(TOPIC, 2, 1)])
except TopicAlreadyExistsError:
    errors.append("TopicAlreadyExistsError")
admin.create_partitions({TOPIC: NewPartitions(total_count=4)})
try:
    admin.create_partitions({TOPIC: NewPartitions(total_count=2)})
except InvalidPartitionsError:
    errors.append("InvalidPartitionsError")
listed = TOPIC in admin.list_topics()
cluster = admin.describe_cluster()
upper = ConfigResource("TOPIC", TOPIC)
typed = ConfigResource(ConfigResourceType.TOPIC, TOPIC)
configs = admin.describe_configs(config_resources=[upper])
text = repr(configs)
admin.delete_topics([TOPIC])
print("RESULT " + json.dumps({
    "listed": listed, "errors": errors, "brokers": len(cluster["brokers"]),
    "retention_seen": "3600000" in text, "same_resource": upper.name == typed.name,
    "gone": TOPIC not in admin.list_topics(),
}))
admin.close()
