"""SaslHandshake (17) and SaslAuthenticate (36)."""

from kafkalite.protocol.primitives import BYTES, INT16, INT64, STRING
from kafkalite.protocol.schema import Array, Field, Message

SASL_HANDSHAKE_REQUEST = Message(
    "SaslHandshakeRequest", valid="0-1", flexible="none", fields=(
        Field("mechanism", STRING),
    ),
)

SASL_HANDSHAKE_RESPONSE = Message(
    "SaslHandshakeResponse", valid="0-1", flexible="none", fields=(
        Field("error_code", INT16),
        Field("mechanisms", Array(STRING)),
    ),
)

SASL_AUTHENTICATE_REQUEST = Message(
    "SaslAuthenticateRequest", valid="0-2", flexible="2+", fields=(
        Field("auth_bytes", BYTES),
    ),
)

SASL_AUTHENTICATE_RESPONSE = Message(
    "SaslAuthenticateResponse", valid="0-2", flexible="2+", fields=(
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("auth_bytes", BYTES),
        Field("session_lifetime_ms", INT64, "1+"),
    ),
)
