import pytest

import kafkalite.errors as public_errors
from kafkalite.protocol import errors


def test_every_code_from_minus_one_to_120_has_its_own_class() -> None:
    codes = [c for c in range(-1, 121) if c != 0]
    classes = [errors.error_for_code(c) for c in codes]
    assert [cls.errno for cls in classes] == codes
    assert len(set(classes)) == len(codes)
    assert all(not cls.__name__.startswith("UnknownBrokerError") for cls in classes)


@pytest.mark.parametrize(
    ("code", "name", "retriable", "invalid_metadata"),
    [
        (-1, "UnknownServerError", False, False),
        (1, "OffsetOutOfRangeError", False, False),
        (2, "CorruptMessageError", True, False),
        (3, "UnknownTopicOrPartitionError", True, True),
        (6, "NotLeaderOrFollowerError", True, True),
        (7, "RequestTimedOutError", True, False),
        (10, "MessageTooLargeError", False, False),
        (13, "NetworkError", True, True),
        (16, "NotCoordinatorError", True, False),
        (17, "InvalidTopicError", False, False),
        (35, "UnsupportedVersionError", False, False),
        (45, "OutOfOrderSequenceNumberError", False, False),
        (56, "KafkaStorageError", True, True),
        (76, "UnsupportedCompressionTypeError", False, False),
        (79, "MemberIdRequiredError", False, False),
        (87, "InvalidRecordError", False, False),
        (100, "UnknownTopicIdError", True, True),
    ],
)
def test_names_and_flags_follow_kafkas_table(
    code: int, name: str, retriable: bool, invalid_metadata: bool
) -> None:
    cls = errors.error_for_code(code)
    assert cls.__name__ == name
    assert getattr(public_errors, name) is cls
    assert cls.retriable is retriable
    assert cls.invalid_metadata is invalid_metadata
    assert issubclass(cls, public_errors.KafkaError)


def test_unknown_code_gets_a_stable_generic_class_carrying_the_number() -> None:
    cls = errors.error_for_code(4242)
    assert cls is errors.error_for_code(4242)
    assert issubclass(cls, errors.BrokerResponseError)
    assert cls.errno == 4242
    assert "4242" in str(cls())
    assert errors.error_for_code(6) is errors.NotLeaderOrFollowerError


def test_raise_for_error() -> None:
    errors.raise_for_error(0, "fine")
    with pytest.raises(errors.NotLeaderOrFollowerError, match=r"Error 6.*topic-0"):
        errors.raise_for_error(6, "topic-0")
    with pytest.raises(ValueError):
        errors.error_for_code(0)
