"""KIP-951's leader hints, shared by Produce v10+ and Fetch v12+/v16+ responses: a partition
answered NOT_LEADER_OR_FOLLOWER (or FENCED_LEADER_EPOCH) names its current leader and epoch,
and the response lists the endpoints of the leaders it names."""

from kafkalite.protocol.primitives import INT32, STRING
from kafkalite.protocol.schema import Array, Field, Struct

CURRENT_LEADER = Struct(
    Field("leader_id", INT32, default=-1),
    Field("leader_epoch", INT32, default=-1),
)

NODE_ENDPOINTS = Array(Struct(
    Field("node_id", INT32),
    Field("host", STRING),
    Field("port", INT32),
    Field("rack", STRING, nullable="0+", default=None),
))
