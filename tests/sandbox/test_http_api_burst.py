"""The sandbox's HTTP API accepts a burst of concurrent clients, as API Gateway does (none is reset)."""

from __future__ import annotations

import http.client
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from instantstart_sandbox.httpapi import HttpApiServer

CLIENTS = 200


def test_given_a_burst_of_concurrent_connections_then_every_request_is_answered() -> None:
    server = HttpApiServer([], None, {"access_key": "AKIDEXAMPLE", "secret_key": "x"}, "us-west-2", "123456789012")
    server.start()
    port = int(server.url.rsplit(":", 1)[1])
    gate = threading.Barrier(CLIENTS)

    def one(_: int) -> int | str:
        gate.wait()
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            connection.request("POST", "/clusters", body=b"{}")
            return connection.getresponse().status
        except OSError as exc:
            return type(exc).__name__

    try:
        with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
            answers = Counter(pool.map(one, range(CLIENTS)))
    finally:
        server.stop()
    # unsigned: API Gateway's IAM check refuses each one, but every client gets that answer
    assert answers == {403: CLIENTS}
