"""aiokafka parameters that kafkalite.aio accepts without acting on them, each with why.

A program written for aiokafka passes them; refusing them would break the one-import
migration. The migration guide's aiokafka tables are generated from this mapping.
"""

from __future__ import annotations

from collections.abc import Mapping

IGNORED_PARAMETERS: Mapping[str, str] = {
    "loop": "the running event loop is used (aiokafka deprecated the parameter)",
    "api_version": "each API's version is negotiated with the broker (ApiVersions); "
                   "aiokafka deprecated it too",
    "connections_max_idle_ms": "connections stay open until stop()",
    "sasl_kerberos_service_name": "only used by GSSAPI, which kafkalite refuses",
    "sasl_kerberos_domain_name": "only used by GSSAPI, which kafkalite refuses",
    "max_poll_interval_ms": "no poll deadline: a member leaves its group on stop() or when "
                            "its session times out",
    "consumer_timeout_ms": "getmany()/getone() wake on the fetch task's answers instead of "
                           "polling at an interval",
}
