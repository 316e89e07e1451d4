"""The web console in a real browser (headless Chromium) against the sandbox: what a person sees and clicks.

Sign in, create a cluster from the form and watch every stage turn SUCCEEDED, see the API's 422 next to the field
it names, retry a failed stage, delete with a confirmation naming the cluster, and the cluster's other pages.
A screenshot of each page is saved (``tests/console/conftest.py::shot``).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.console.conftest import NARROW, shot
from tests.integration.conftest import GROUP, ready_cluster, refusal

STAGES = ["network", "access", "dependencies", "hyperpod", "storage", "verify"]
SETTLE_SECONDS = 240


def stage_statuses(page: Any) -> dict[str, str]:
    """The progress panel as shown: stage name -> the status on its badge."""
    pairs = page.eval_on_selector_all(
        "li.stage", "els => els.map(e => [e.dataset.stage, e.querySelector('.badge').textContent.trim()])"
    )
    return dict(pairs)


def watch_stages(page: Any, until: Any, screenshot_when_running: str | None = None) -> dict[str, set[str]]:
    """Read the panel every 0.2 s until ``until(statuses)`` holds; every status each stage showed on the way."""
    seen: dict[str, set[str]] = {name: set() for name in STAGES}
    deadline = time.monotonic() + SETTLE_SECONDS
    shot_taken = screenshot_when_running is None
    statuses: dict[str, str] = {}
    while time.monotonic() < deadline:
        statuses = stage_statuses(page)
        for name, status in statuses.items():
            seen[name].add(status)
        if not shot_taken and statuses.get("hyperpod") == "RUNNING":
            shot(page, str(screenshot_when_running))
            shot_taken = True
        if statuses and until(statuses):
            return seen
        time.sleep(0.2)
    raise AssertionError(f"the progress panel did not get there: {statuses}")


def fill_create_form(page: Any, tag: str, instance_type: str | None = None) -> None:
    """Open the create page from the header and fill the tag (and the instance type); the zone is us-west-2c."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Create cluster").click()
    page.get_by_role("heading", name="Create cluster", level=1).wait_for()
    page.get_by_label("Cluster tag").fill(tag)
    page.locator("#f-availabilityZone option[value='us-west-2c']").wait_for(state="attached")
    page.get_by_label("Availability Zone").select_option("us-west-2c")
    if instance_type is not None:
        page.get_by_label("Instance type").fill(instance_type)


def submit(page: Any) -> None:
    page.locator("form.create").get_by_role("button", name="Create cluster").click()


def all_succeeded(statuses: dict[str, str]) -> bool:
    return [statuses.get(name) for name in STAGES] == ["SUCCEEDED"] * len(STAGES)


def test_given_the_sandbox_console_when_signing_in_then_the_cluster_list_shows_and_only_session_storage_holds_the_keys(
    console: Any, sandbox: Sandbox
) -> None:
    page = console

    storage = page.evaluate("() => ({session: Object.keys(sessionStorage), local: localStorage.length})")
    assert storage == {"session": ["instantstart.console.session"], "local": 0}
    assert page.get_by_role("button", name="Refresh").is_visible()
    shot(page, "01-cluster-list")

    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("heading", name="Sign in to InstantStart").wait_for()
    assert page.evaluate("() => sessionStorage.length") == 0
    shot(page, "00-sign-in")


def test_given_the_create_form_when_submitted_then_the_progress_panel_shows_every_stage_turn_succeeded(
    console: Any,
) -> None:
    page = console
    fill_create_form(page, "console-a")
    submit(page)

    page.wait_for_url("**/console/#/clusters/console-a")
    seen = watch_stages(page, all_succeeded, screenshot_when_running="03-stages-in-progress")
    assert all("SUCCEEDED" in seen[name] for name in STAGES)
    assert any(len(statuses) > 1 for statuses in seen.values()), f"the panel never showed a stage change: {seen}"
    page.locator("h1 .badge", has_text="READY").wait_for()
    assert page.locator(".facts").inner_text().count("1/1") == 1, "nodes ready / target"
    link = page.get_by_role("link", name="Step Functions").first
    assert link.get_attribute("href").startswith(
        "https://us-west-2.console.aws.amazon.com/states/home?region=us-west-2#/v2/executions/details/"
        "arn:aws:states:us-west-2:123456789012:execution:"
    )
    shot(page, "04-cluster-ready")

    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.method + " " + r.url.split("?")[0]))
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Clusters").click()
    row = page.locator("tr", has=page.get_by_role("link", name="console-a"))
    row.locator(".badge", has_text="READY").wait_for()
    assert row.locator(".chip-succeeded").count() == len(STAGES)
    assert row.get_by_label("1 of 1 nodes ready").is_visible()
    api_calls = [r for r in requests if "/clusters" in r]
    assert api_calls and all(r.endswith("/clusters") for r in api_calls), (
        f"one GET /clusters, no GET per cluster: {api_calls}"
    )
    shot(page, "05-cluster-list-ready")


def test_given_a_value_only_the_api_refuses_then_its_422_is_shown_next_to_the_field_it_names(
    console: Any, api: InstantStartClient
) -> None:
    page = console
    fill_create_form(page, "console-bad", instance_type="ml.nope.xlarge")  # the right shape: the form lets it go

    with page.expect_response(lambda r: r.url.endswith("/clusters") and r.request.method == "POST") as answer:
        submit(page)

    assert answer.value.status == 422
    detail = answer.value.json()["error"]["details"][0]
    assert detail["field"] == "instanceGroups[0].instanceType"
    field = page.get_by_label("Instance type")
    error = page.locator("#f-instanceGroups-0-instanceType-error")
    error.wait_for()
    assert error.inner_text() == detail["message"]
    assert field.get_attribute("aria-invalid") == "true"
    assert "f-instanceGroups-0-instanceType-error" in field.get_attribute("aria-describedby")
    assert page.evaluate("() => document.activeElement.id") == "f-instanceGroups-0-instanceType"
    shot(page, "06-create-form-422")
    assert refusal(lambda: api.get_cluster("console-bad")).status == 404


def test_given_a_value_the_form_knows_is_wrong_then_it_says_so_without_sending_anything(console: Any) -> None:
    page = console
    fill_create_form(page, "Bad_Tag")
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)

    submit(page)

    error = page.locator("#f-clusterTag-error")
    error.wait_for()
    assert error.inner_text().startswith("clusterTag must be a lowercase letter first")
    assert page.evaluate("() => document.activeElement.id") == "f-clusterTag"
    assert posts == []
    shot(page, "07-create-form-client-rule")


def test_given_a_failed_stage_when_retried_from_its_panel_then_the_cluster_completes_and_deletes_after_confirmation(
    console: Any, sandbox: Sandbox, api: InstantStartClient
) -> None:
    page = console
    message = "The account-level service limit 'Maximum number of VPCs' is 5 VPCs."
    sandbox.aws.extension.faults.inject("ec2", "CreateVpc", "VpcLimitExceeded", message, times=1)
    fill_create_form(page, "console-retry")
    submit(page)
    page.wait_for_url("**/console/#/clusters/console-retry")

    watch_stages(page, lambda s: s.get("network") == "FAILED")
    network = page.locator("li.stage[data-stage='network']")
    assert network.locator(".stage-error").inner_text() == f"VpcLimitExceeded: {message}"
    page.locator("h1 .badge", has_text="FAILED").wait_for()
    shot(page, "08-stage-failed")

    network.get_by_role("button", name="Retry network").click()
    watch_stages(page, all_succeeded)
    assert "attempt 2" in network.inner_text()
    page.locator("h1 .badge", has_text="READY").wait_for()

    # Cancel first: Escape closes the dialog and nothing is deleted.
    page.get_by_role("button", name="Delete cluster").click()
    dialog = page.get_by_role("dialog", name="Delete cluster console-retry?")
    dialog.wait_for()
    shot(page, "09-delete-confirmation")
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")
    assert api.get_cluster("console-retry")["status"] == "READY"

    page.get_by_role("button", name="Delete cluster").click()
    with page.expect_response(lambda r: r.request.method == "DELETE") as answer:
        page.get_by_role("dialog").get_by_role("button", name="Delete console-retry").click()
    assert answer.value.status == 202
    page.locator("h1 .badge", has_text="DELETING").wait_for()
    page.locator(".teardown").first.wait_for()
    shot(page, "10-cluster-deleting")
    page.get_by_text("Cluster console-retry was deleted.").wait_for(timeout=SETTLE_SECONDS * 1000)
    assert page.locator("tr", has_text="DELETE_CLUSTER").locator(".badge", has_text="SUCCEEDED").is_visible()
    shot(page, "10-cluster-deleted")
    assert refusal(lambda: api.get_cluster("console-retry")).status == 404


@pytest.fixture
def ready_tag(api: InstantStartClient) -> str:
    """``console-a``, READY (created through the API when the form test did not run first)."""
    try:
        api.get_cluster("console-a")
    except ApiError:
        ready_cluster(api, "console-a", [GROUP])
    return "console-a"


def test_given_a_ready_cluster_then_its_pages_show_groups_nodes_events_features_jobs_and_endpoints(
    console: Any, api: InstantStartClient, ready_tag: str
) -> None:
    page = console
    page.evaluate(f"() => {{ location.hash = '#/clusters/{ready_tag}/instance-groups'; }}")
    group = page.locator("tr", has_text="accel")
    group.wait_for()
    assert "ml.g6.4xlarge" in group.inner_text() and "1/1" in group.inner_text()
    shot(page, "11-instance-groups")

    page.get_by_role("link", name="Nodes").click()
    row = page.locator("tbody tr").first
    row.wait_for()
    instance_id = row.locator("td").first.inner_text()
    row.get_by_role("button", name=f"Reboot {instance_id}").click()
    dialog = page.get_by_role("dialog", name=f"Reboot node {instance_id} of cluster {ready_tag}?")
    dialog.wait_for()
    shot(page, "12-nodes-reboot-confirmation")
    with page.expect_response(lambda r: r.url.endswith("/nodes/reboot")) as answer:
        dialog.get_by_role("button", name="Reboot node").click()
    assert answer.value.status == 202
    assert json.loads(answer.value.request.post_data) == {"nodeIds": [instance_id]}
    page.get_by_text(f"Reboot of {instance_id} started").wait_for()
    _wait_for_operation(api, answer.value.json()["operationId"])

    page.get_by_role("link", name="Events").click()
    page.locator("tbody tr").first.wait_for()
    shot(page, "13-events")

    page.get_by_role("link", name="Features").click()
    switch = page.get_by_role("switch", name="kubeRay")
    switch.wait_for()
    was_on = switch.is_checked()
    switch.click()
    page.get_by_role("button", name="Review 1 change").click()
    review = page.get_by_role("dialog", name=f"Change features of cluster {ready_tag}?")
    review.wait_for()
    shot(page, "14-features-review")
    with page.expect_response(lambda r: r.request.method == "PATCH") as answer:
        review.get_by_role("button", name="Apply").click()
    assert json.loads(answer.value.request.post_data) == {"kubeRay": {"enabled": not was_on}}, "only the diff"
    assert answer.value.status == 202
    page.get_by_text("Feature change started").wait_for()

    page.get_by_role("link", name="Training jobs").click()
    page.get_by_text("No training jobs").wait_for()
    shot(page, "15-training-jobs")
    page.get_by_role("link", name="Inference").click()
    page.get_by_text("No inference endpoints").wait_for()
    shot(page, "16-inference")

    page.set_viewport_size(NARROW)
    page.get_by_role("link", name="Overview").click()
    page.locator("li.stage").first.wait_for()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= NARROW["width"], "no sideways scrolling"
    shot(page, "17-narrow-cluster")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Clusters").click()
    page.locator("tbody tr").first.wait_for()
    shot(page, "18-narrow-list")


def _wait_for_operation(api: InstantStartClient, operation_id: str) -> None:
    deadline = time.monotonic() + SETTLE_SECONDS
    while api.get_operation(operation_id)["status"] not in ("SUCCEEDED", "FAILED", "CANCELLED"):
        assert time.monotonic() < deadline, operation_id
        time.sleep(0.5)


def test_given_the_sandbox_deployment_then_only_the_consoles_cloudfront_cognito_and_publisher_resources_are_skipped(
    sandbox: Sandbox,
) -> None:
    import boto3

    assert sandbox.deployment is not None
    assert sorted(sandbox.deployment.skipped) == [
        "ConsoleContent",
        "ConsoleDistribution",
        "ConsoleHeaders",
        "ConsoleIdentityPool",
        "ConsoleIdentityPoolRoles",
        "ConsoleOriginAccessControl",
        "ConsoleUserPool",
        "ConsoleUserPoolClient",
    ]
    s3 = boto3.client("s3", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    bucket = sandbox.deployment.physical["ConsoleBucket"]
    block = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    assert all(block.values())
    policy = json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"])
    assert [s["Principal"] for s in policy["Statement"]] == [{"Service": "cloudfront.amazonaws.com"}, "*"]
