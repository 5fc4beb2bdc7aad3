"""Kafka-style error text for the tools: an error printed as the Java tool prints its exception."""
from __future__ import annotations

import os
import sys
from typing import Any, Callable

from confluent_kafka import KafkaError, KafkaException

ERRORS_PACKAGE = "org.apache.kafka.common.errors."
JAVA_EXCEPTIONS = {"REQUEST_TIMED_OUT": "TimeoutException", "_TIMED_OUT": "TimeoutException",
                   "INVALID_TOPIC_EXCEPTION": "InvalidTopicException",
                   "UNKNOWN_TOPIC_OR_PART": "UnknownTopicOrPartitionException",
                   "_NOENT": "UnknownTopicOrPartitionException",
                   # Java's authorization exceptions drop librdkafka's "Failed"
                   "TOPIC_AUTHORIZATION_FAILED": "TopicAuthorizationException",
                   "GROUP_AUTHORIZATION_FAILED": "GroupAuthorizationException",
                   "CLUSTER_AUTHORIZATION_FAILED": "ClusterAuthorizationException",
                   "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "TransactionalIdAuthorizationException"}  # librdkafka's names (_NOENT: no leader known)


def java_exception(error: Any) -> str:
    """Kafka prints the exception: ``org.apache.kafka.common.errors.<Name>Exception: message``."""
    if isinstance(error, KafkaException) and error.args:
        error = error.args[0]
    if not isinstance(error, KafkaError):
        return str(error)
    name = error.name()
    cls = JAVA_EXCEPTIONS.get(name) or "".join(w.capitalize() for w in name.strip("_").split("_")) + "Exception"
    return f"{ERRORS_PACKAGE}{cls}: {error.str()}"


def silence_stdout() -> None:
    """The reader of stdout went away (``| head``): later writes, and Python's flush at exit, go nowhere."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def quiet_on_broken_pipe(run: Callable[[list[str] | None], int], argv: list[str] | None) -> int:
    """``run(argv)``, ending quietly with 0 when stdout is closed early, as Java's PrintStream does."""
    try:
        return run(argv)
    except BrokenPipeError:
        silence_stdout()
        return 0
