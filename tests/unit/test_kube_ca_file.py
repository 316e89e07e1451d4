"""The cluster CA file is written once per content, and threads of one process writing it at once never collide."""

from __future__ import annotations

import base64
import tempfile
import threading
from pathlib import Path

import pytest

from instantstart.kube import client


def test_given_many_threads_writing_the_same_ca_at_once_then_each_gets_the_one_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    start = threading.Barrier(24)
    paths: list[str] = []
    errors: list[BaseException] = []

    def write() -> None:
        start.wait()
        try:
            for _ in range(20):
                paths.append(client._ca_file(base64.b64encode(pem).decode()))
                for leftover in tmp_path.glob("instantstart-ca-*.pem"):
                    leftover.unlink(missing_ok=True)  # every round writes it again, all threads at once
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=write) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(paths)) == 1
    assert not list(tmp_path.glob("*.tmp")), "no temporary file is left behind"
