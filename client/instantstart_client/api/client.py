"""``InstantStartClient``: the transport core, calls by operation id, and one mixin of route methods per area."""

from __future__ import annotations

from instantstart_client.api.clusters import ClustersApi
from instantstart_client.api.governance import GovernanceApi
from instantstart_client.api.groups import InstanceGroupsApi
from instantstart_client.api.inference import InferenceApi
from instantstart_client.api.nodes import NodesApi
from instantstart_client.api.operations import OperationsApi
from instantstart_client.api.training import TrainingApi


class InstantStartClient(
    ClustersApi, InstanceGroupsApi, NodesApi, TrainingApi, InferenceApi, GovernanceApi, OperationsApi
):
    """Client of the InstantStart HTTP API; one method per route.

    Args:
        api_url: base URL of the API (``https://{id}.execute-api.{region}.amazonaws.com`` plus a stage
            path if the API has one); default ``$INSTANTSTART_API_URL``.
        region: signing region; default ``$AWS_REGION``, else the region in an execute-api host name,
            else the botocore session's region (``AWS_DEFAULT_REGION``, profile).
        session: botocore session whose credential chain signs requests (default: a new session,
            honouring ``AWS_PROFILE`` and the usual environment variables).
        timeout: seconds for connect/read/write of one attempt.
        max_attempts: attempts per request for 429, 503, 409 IdempotencyKeyInProgress and connection
            errors (1 disables retries).
        backoff_initial: seconds of the first backoff window; windows double per attempt (full jitter).
        backoff_max: ceiling of one backoff wait in seconds (also caps ``Retry-After``).
        transport: an ``httpx2`` transport (tests, proxies); default: the standard HTTP transport.
        sleep: the function that waits between attempts (default ``time.sleep``).

    Raises:
        ConfigurationError: no API URL or no region could be determined.

    Credentials are resolved on the first request (so ``--help`` and argument errors need none) and
    raise :class:`ConfigurationError` when the chain finds nothing.
    """

    def __enter__(self) -> InstantStartClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
