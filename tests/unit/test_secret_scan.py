"""The secret scan of the test suites (tests/secret_scan.py) finds each kind of secret and nothing else."""

from __future__ import annotations

import pytest

from tests.secret_scan import find

EKS_TOKEN = "k8s-aws-v1.aHR0cHM6Ly9zdHMudXMtd2VzdC0yLmFtYXpvbmF3cy5jb20vP0FjdGlvbj1HZXRDYWxsZXJJZGVudGl0eQ"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("key AKIAIOSFODNN7EXAMPLE in a log line", "AWS access key id"),
        ("temporary ASIAZZZZZZZZZZZZZZZZ", "AWS access key id"),
        ('{"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}', "AWS secret access key"),
        ("aws_session_token=" + "IQoJb3JpZ2luX2VjE" * 4, "AWS session token"),
        (f"Authorization: Bearer {EKS_TOKEN}", "EKS bearer token"),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc", "bearer token"),
        ("env HF_TOKEN=hf_NeverEchoedTokenValue123", "Hugging Face token"),
    ],
)
def test_each_kind_of_secret_is_found(text: str, kind: str) -> None:
    assert kind in find(text)


@pytest.mark.parametrize(
    "text",
    [
        "export AWS_ACCESS_KEY_ID=AKIASANDBOXEXAMPLE00",  # the sandbox's published credentials
        '{"hfTokenSecret": {"name": "hf-token", "key": "token"}}',  # a Secret reference, not a token
        "Authorization: Bearer sandbox-test-token",
        "instance i-0123456789abcdef0 in subnet-0123456789abcdef0, arn:aws:iam::123456789012:role/x",
        "op-0123456789abcdef0123456789abcdef",
    ],
)
def test_what_is_not_a_secret_is_not_reported(text: str) -> None:
    assert find(text) == []
