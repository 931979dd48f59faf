"""The broker's Prometheus metrics, under the names Kafka's JMX-exporter rules give them.

The request path only bumps plain integers (:mod:`.counters`, :mod:`.requests`); a scrape
reads them, with the partition and metadata state, on the broker's event loop
(:mod:`.broker_collector`) and :mod:`.endpoint` serves them over HTTP from a thread of its
own, so the loop never waits on a scraper.
"""
