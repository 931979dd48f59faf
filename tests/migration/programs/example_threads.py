"""The shape of kafka-python's example.py: an admin creates the topic, a producer thread and a
consumer thread run side by side, the main thread waits for both."""

import json
import sys
import threading

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC = f"{PREFIX}-my-topic"
COUNT = 20


class Producer(threading.Thread):
    def run(self):
        producer = KafkaProducer(bootstrap_servers=BOOTSTRAP)
        for _i in range(COUNT // 2):
            producer.send(TOPIC, b"test")
            producer.send(TOPIC, b"\xc2Hola, mundo!")
        producer.flush()
        producer.close()


class Consumer(threading.Thread):
    def __init__(self):
        super().__init__()
        self.values = []

    def run(self):
        consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, auto_offset_reset="earliest",
                                 consumer_timeout_ms=5000)
        consumer.subscribe([TOPIC])
        for message in consumer:
            self.values.append(message.value.decode("utf-8", "replace"))
            if len(self.values) == COUNT:
                break
        consumer.close()


admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
admin.create_topics([NewTopic(name=TOPIC, num_partitions=1, replication_factor=1)])
try:
    admin.create_topics([NewTopic(name=TOPIC, num_partitions=1, replication_factor=1)])
    again = "created twice"
except TopicAlreadyExistsError:
    again = "already exists"
admin.close()

consumer, producer = Consumer(), Producer()
consumer.start()
producer.start()
producer.join()
consumer.join()
print("RESULT " + json.dumps({"second_create": again, "count": len(consumer.values),
                              "values": sorted(set(consumer.values))}))
