"""Every IAM document the core builds at run time fits IAM's quotas with ``iam_quotas.HEADROOM`` to spare, built from
the longest inputs the API's models and AWS allow: a 24-character cluster tag, a 100-character imported EKS cluster
name, the longest partition and Region botocore knows, an MLflow resource ARN with a 256-character name and a
1,024-character artifact store URI. Each role the core creates has one inline policy (its aggregate) and a trust
policy; the core creates no customer managed policy and attaches none."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from instantstart.aws import iam_quotas
from instantstart.clusters import addons, autoscaling_role
from instantstart.features.catalog import FEATURES, PodIdentityRole, PolicyContext, tls_bucket_name
from instantstart.mlflow import identity
from instantstart.models.cluster import CLUSTER_TAG_PATTERN
from instantstart.naming import storage_bucket_name
from tests.contract.iam_quotas import longest_pseudo_parameters

PSEUDO = longest_pseudo_parameters()
PARTITION, REGION, ACCOUNT = PSEUDO["AWS::Partition"], PSEUDO["AWS::Region"], PSEUDO["AWS::AccountId"]
TAG = "t" * 24
EKS_NAME = "e" * 100
"""An imported EKS cluster's name: EKS allows 100 characters (the import request's pattern)."""
NAMESPACE = "n" * 63
TRACKING_SERVER = f"arn:{PARTITION}:sagemaker:{REGION}:{ACCOUNT}:mlflow-tracking-server/{'s' * 256}"
MLFLOW_APP = f"arn:{PARTITION}:sagemaker:{REGION}:{ACCOUNT}:mlflow-app/{'a' * 256}"
ARTIFACTS = "s3://" + "b" * 63 + "/" + "p" * (1024 - 5 - 63 - 1)
"""botocore's ``S3Uri``: at most 1,024 characters."""
WORKSPACE = f"arn:{PARTITION}:aps:{REGION}:{ACCOUNT}:workspace/{'w' * 64}"

INLINE = iam_quotas.INLINE_POLICIES_PER_ROLE
TRUST = iam_quotas.TRUST_POLICY


def test_given_the_longest_inputs_then_they_are_what_the_models_allow() -> None:
    assert re.fullmatch(CLUSTER_TAG_PATTERN, TAG) and not re.fullmatch(CLUSTER_TAG_PATTERN, TAG + "t")
    assert len(ARTIFACTS) == 1024


def test_given_a_document_then_its_size_is_its_json_without_whitespace() -> None:
    document = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["s3:GetObject"]}]}

    compact = '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"]}]}'
    assert iam_quotas.policy_size(document) == len(compact)
    assert iam_quotas.policy_size(
        '{\n  "Version" : "2012-10-17",\n  "Statement": [{"Effect": "Allow", "Action": ["s3:GetObject"]}]\n}'
    ) == len(compact)
    # whitespace inside a value is counted (the harsher reading)
    assert iam_quotas.policy_size({"Sid": "a b"}) == len('{"Sid":"a b"}')
    assert iam_quotas.budget(INLINE) == 8192 and iam_quotas.within_budget(8192, INLINE)
    assert not iam_quotas.within_budget(8193, INLINE)
    with pytest.raises(ValueError):
        iam_quotas.policy_size("{not json")


def _feature_roles() -> list[tuple[str, PodIdentityRole]]:
    out = []
    for spec in FEATURES.values():
        out += [(spec.key, role) for role in spec.roles]
        out += [(f"{spec.key}.{c.option}", role) for c in spec.companions for role in c.roles]
    return out


def _context() -> PolicyContext:
    return PolicyContext(
        partition=PARTITION,
        region=REGION,
        account_id=ACCOUNT,
        tag=TAG,
        storage_bucket=storage_bucket_name(TAG, ACCOUNT, REGION),
        tls_bucket=tls_bucket_name(TAG, ACCOUNT, REGION),
        eks_cluster_name=EKS_NAME,
        prometheus_workspace_arn=WORKSPACE,
    )


INLINE_BUILDERS: dict[str, Callable[[], dict[str, Any]]] = {
    "s3-csi storage role": lambda: addons.storage_role_policy(TAG, ACCOUNT, REGION),
    "hyperpod autoscaling role": lambda: autoscaling_role.scaling_policy(
        TAG, account_id=ACCOUNT, region=REGION, partition=PARTITION
    ),
    "mlflow pod role (tracking server)": lambda: identity.pod_policy(TRACKING_SERVER, ARTIFACTS),
    "mlflow pod role (app)": lambda: identity.pod_policy(MLFLOW_APP, ARTIFACTS),
    "mlflow server role": lambda: identity.server_policy(ARTIFACTS),
    **{f"feature {key} {role.suffix}": (lambda r=role: r.policy(_context())) for key, role in _feature_roles()},
}
TRUST_BUILDERS: dict[str, Callable[[], dict[str, Any]]] = {
    "s3-csi storage role": lambda: addons.pod_identity_trust(ACCOUNT),
    "hyperpod autoscaling role": lambda: autoscaling_role.trust_policy(ACCOUNT),
    "mlflow pod role": lambda: addons.pod_identity_trust(
        ACCOUNT, cluster_name=EKS_NAME, namespace=NAMESPACE, service_account=identity.SERVICE_ACCOUNT
    ),
    "mlflow server role": lambda: identity.server_trust(ACCOUNT),
    **{
        f"feature {key} {role.suffix}": (
            lambda r=role: addons.pod_identity_trust(
                ACCOUNT, cluster_name=EKS_NAME, namespace=r.namespace, service_account=r.service_account
            )
        )
        for key, role in _feature_roles()
    },
}


def test_given_the_catalogue_then_every_feature_role_is_measured() -> None:
    assert len(_feature_roles()) >= 6
    assert {f"feature {k} {r.suffix}" for k, r in _feature_roles()} <= set(INLINE_BUILDERS) & set(TRUST_BUILDERS)


@pytest.mark.parametrize("builder", sorted(INLINE_BUILDERS))
def test_given_the_longest_inputs_then_the_inline_policy_is_within_budget(builder: str) -> None:
    size = iam_quotas.policy_size(INLINE_BUILDERS[builder]())

    print(f"{builder}: inline {size}/{iam_quotas.budget(INLINE)} (quota {INLINE})")
    assert iam_quotas.within_budget(size, INLINE)


@pytest.mark.parametrize("builder", sorted(TRUST_BUILDERS))
def test_given_the_longest_inputs_then_the_trust_policy_is_within_budget(builder: str) -> None:
    size = iam_quotas.policy_size(TRUST_BUILDERS[builder]())

    print(f"{builder}: trust {size}/{iam_quotas.budget(TRUST)} (quota {TRUST})")
    assert iam_quotas.within_budget(size, TRUST)
