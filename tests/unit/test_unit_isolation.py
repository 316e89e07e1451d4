"""The guards of the unit tests themselves: no network, and AWS only through moto."""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest


def test_given_the_network_guard_when_resolving_a_public_name_then_the_test_fails(no_network: None) -> None:
    with pytest.raises(AssertionError, match="resolve a network name"):
        socket.getaddrinfo("dynamodb.us-west-2.amazonaws.com", 443)


def test_given_the_network_guard_when_connecting_to_a_public_address_then_the_test_fails(no_network: None) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(AssertionError, match="network"):
        sock.connect(("192.0.2.10", 443))


def test_given_the_network_guard_when_connecting_to_loopback_then_it_is_allowed(no_network: None) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        accepted = threading.Thread(target=lambda: server.accept()[0].close())
        accepted.start()
        with socket.create_connection(server.getsockname(), timeout=5):
            pass
        accepted.join(timeout=5)


def test_given_dummy_credentials_and_moto_when_calling_aws_then_nothing_leaves_the_process(aws: Any) -> None:
    zones = aws.client("ec2").describe_availability_zones()["AvailabilityZones"]

    assert "us-west-2c" in [z["ZoneName"] for z in zones]
    assert aws.client("sts").get_caller_identity()["Account"] == "123456789012"


def test_given_a_thread_creating_loggers_when_pytest_starts_capturing_logs_then_it_never_fails() -> None:
    """The sandbox's threads create loggers as they import lazily; pytest walks the logger registry as each test phase
    starts. ``tests/conftest.py`` makes that walk a snapshot (without it: about 1,300 failures in this loop)."""
    import logging
    import sys

    from _pytest.logging import LogCaptureHandler, catching_logs

    def create_loggers() -> None:
        for i in range(3000):
            logging.getLogger(f"instantstart-test-logger-race.n{i}")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    creator = threading.Thread(target=create_loggers)
    failures = []
    try:
        creator.start()
        while creator.is_alive():
            try:
                with catching_logs(LogCaptureHandler()):
                    pass
            except RuntimeError as exc:
                failures.append(str(exc))
    finally:
        sys.setswitchinterval(interval)
        creator.join()
    assert failures == []
