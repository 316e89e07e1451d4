"""CloudFormation custom resource ``Custom::ConsoleContent``: the web console's files and config in its bucket.

Deployed from ``console/`` (``template.yaml``: ``ConsolePublisherFunction``), so the package holds the static files
under ``site/``. On Create and Update it uploads every file of ``site/`` with its Content-Type, writes
``config.json`` from the resource's ``Config`` property (API URL, Region, Cognito ids: known only once the stack's
resources exist), deletes the objects a previous version had and this one has not, and invalidates the
distribution's cache. On Delete it empties the bucket, so that CloudFormation can delete it. The answer goes to
the pre-signed ``ResponseURL`` CloudFormation gave (an HTTPS PUT), as every custom resource's does.

boto3 only (S3 ``PutObject``/``ListObjectsV2``/``DeleteObjects``, CloudFront ``CreateInvalidation``).
"""

from __future__ import annotations

import json
import logging
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3

SITE_DIR = Path(__file__).resolve().parent / "site"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".md": "text/plain; charset=utf-8",
    ".LICENSE": "text/plain; charset=utf-8",
}
CACHE_CONTROL = "no-cache"
"""Browsers revalidate every file (ETag): file names carry no content hash, and a deployment changes them in place."""

logger = logging.getLogger(__name__)


def site_files(site_dir: Path = SITE_DIR) -> Iterator[tuple[str, Path, str]]:
    """``(key, path, content_type)`` of each console file to publish (kinds without a Content-Type are skipped)."""
    for path in sorted(site_dir.rglob("*")):
        kind = CONTENT_TYPES.get(path.suffix)
        if path.is_file() and kind is not None:
            yield path.relative_to(site_dir).as_posix(), path, kind


def publish(s3: Any, bucket: str, config: dict[str, Any], site_dir: Path = SITE_DIR) -> list[str]:
    """Upload the site and ``config.json`` to ``bucket``; delete keys no longer published. Returns the keys written.

    Args:
        s3: a boto3 S3 client.
        bucket: the console bucket's name.
        config: the browser's ``config.json`` (``mode``, ``apiUrl``, ``region``, Cognito ids).
    """
    written: list[str] = []
    for key, path, kind in site_files(site_dir):
        if key == "config.json":
            continue
        s3.put_object(Bucket=bucket, Key=key, Body=path.read_bytes(), ContentType=kind, CacheControl=CACHE_CONTROL)
        written.append(key)
    s3.put_object(
        Bucket=bucket,
        Key="config.json",
        Body=json.dumps(config, indent=2).encode(),
        ContentType="application/json",
        CacheControl=CACHE_CONTROL,
    )
    written.append("config.json")
    stale = [key for key in _keys(s3, bucket) if key not in set(written)]
    _delete(s3, bucket, stale)
    return written


def empty(s3: Any, bucket: str) -> int:
    """Delete every object of ``bucket``; how many there were."""
    keys = list(_keys(s3, bucket))
    _delete(s3, bucket, keys)
    return len(keys)


def invalidate(cloudfront: Any, distribution_id: str, reference: str) -> str:
    """Invalidate every path of the distribution's cache; the invalidation id."""
    answer = cloudfront.create_invalidation(
        DistributionId=distribution_id,
        InvalidationBatch={"Paths": {"Quantity": 1, "Items": ["/*"]}, "CallerReference": reference},
    )
    return str(answer["Invalidation"]["Id"])


def _keys(s3: Any, bucket: str) -> Iterator[str]:
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for item in page.get("Contents", []):
            yield item["Key"]


def _delete(s3: Any, bucket: str, keys: list[str]) -> None:
    for start in range(0, len(keys), 1000):
        batch = [{"Key": key} for key in keys[start : start + 1000]]
        s3.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})


def respond(event: dict[str, Any], status: str, reason: str = "", data: dict[str, str] | None = None) -> None:
    """PUT the custom resource's answer to CloudFormation's pre-signed ``ResponseURL``."""
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason[:1000] or status,
            "PhysicalResourceId": event.get("PhysicalResourceId") or f"console-content-{event['LogicalResourceId']}",
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "Data": data or {},
        }
    ).encode()
    request = urllib.request.Request(
        event["ResponseURL"], data=body, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(body))}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        answer.read()


def handler(event: dict[str, Any], context: Any) -> None:
    """Lambda entry point of ``Custom::ConsoleContent`` (Create, Update, Delete); always answers CloudFormation."""
    props = event.get("ResourceProperties", {})
    try:
        s3 = boto3.client("s3")
        bucket = str(props["BucketName"])
        if event["RequestType"] == "Delete":
            removed = empty(s3, bucket)
            respond(event, "SUCCESS", data={"Removed": str(removed)})
            return
        written = publish(s3, bucket, dict(props["Config"]))
        data = {"Files": str(len(written))}
        if props.get("DistributionId"):
            data["InvalidationId"] = invalidate(
                boto3.client("cloudfront"), str(props["DistributionId"]), event["RequestId"]
            )
        respond(event, "SUCCESS", data=data)
    except Exception as error:
        logger.exception("console content %s failed", event.get("RequestType"))
        respond(event, "FAILED", reason=f"{type(error).__name__}: {error}")
