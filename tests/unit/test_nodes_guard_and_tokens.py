"""The node-ownership guard, the request models of the node actions, and the API's page tokens."""

from __future__ import annotations

import base64

import pytest
from pydantic import ValidationError

from instantstart.clusters import page_tokens
from instantstart.clusters.hyperpod_operations import check_group_names
from instantstart.clusters.nodes import check_own_nodes
from instantstart.errors import InvalidRequest, ValidationFailed
from instantstart.models.nodes import DeleteNodesRequest, RebootOrReplaceNodesRequest

MINE = ["i-0aaaaaaaaaaaaaaaa", "i-0bbbbbbbbbbbbbbbb"]
LISTING = {"tag": "demo", "generation": 1, "group": None}


def test_given_only_nodes_of_the_cluster_then_the_guard_passes() -> None:
    check_own_nodes(list(reversed(MINE)), MINE)


def test_given_a_foreign_id_then_the_guard_names_its_index_and_says_nothing_was_done() -> None:
    with pytest.raises(ValidationFailed) as refused:
        check_own_nodes([MINE[0], "i-0123456789abcdef0", MINE[1], "i-01234567"], MINE)

    assert [d["field"] for d in refused.value.details] == ["nodeIds[1]", "nodeIds[3]"]
    assert "i-0123456789abcdef0" in refused.value.details[0]["message"]
    assert "nothing was done" in refused.value.message


def test_given_an_unknown_group_then_the_detail_names_the_indexed_field_and_lists_the_groups() -> None:
    with pytest.raises(ValidationFailed) as refused:
        check_group_names(["accel", "gpu"], {"accel", "cpu"}, "instanceGroups[{i}].instanceGroupName")

    (detail,) = refused.value.details
    assert detail["field"] == "instanceGroups[1].instanceGroupName"
    assert detail["allowedValues"] == ["accel", "cpu"]


def test_given_26_ids_then_reboot_is_refused_but_delete_accepts_them() -> None:
    ids = [f"i-{n:017x}" for n in range(26)]
    with pytest.raises(ValidationError):
        RebootOrReplaceNodesRequest(node_ids=ids)
    assert DeleteNodesRequest(node_ids=ids).node_ids == ids


@pytest.mark.parametrize("bad", [["i-0123"], ["I-0123456789ABCDEF0"], ["hyperpod-i-0123456789abcdef0"], []])
def test_given_a_malformed_or_empty_id_list_then_the_request_is_refused(bad: list[str]) -> None:
    with pytest.raises(ValidationError):
        RebootOrReplaceNodesRequest(node_ids=bad)


def test_given_a_repeated_id_then_the_request_is_refused_naming_it() -> None:
    with pytest.raises(ValidationError) as refused:
        RebootOrReplaceNodesRequest(node_ids=[MINE[0], MINE[1], MINE[0]])
    assert MINE[0] in str(refused.value)


def test_given_a_sealed_token_then_it_opens_for_the_same_listing_only() -> None:
    position = page_tokens.Position("sm-SAGEMAKER-OPAQUE", 100, 3, "i-0aaaaaaaaaaaaaaaa")
    token = page_tokens.seal("cluster-nodes", LISTING, position)

    assert "sm-SAGEMAKER" not in token
    assert page_tokens.open_token("cluster-nodes", token, LISTING) == position
    for other in ({**LISTING, "generation": 2}, {**LISTING, "tag": "other"}, {**LISTING, "group": "accel"}):
        with pytest.raises(InvalidRequest) as refused:
            page_tokens.open_token("cluster-nodes", token, other)
        assert refused.value.details == [{"field": "nextToken"}]


def test_given_a_token_of_another_kind_of_listing_then_it_is_refused() -> None:
    token = page_tokens.seal("cluster-events", LISTING, page_tokens.Position(None, 20))
    with pytest.raises(InvalidRequest):
        page_tokens.open_token("cluster-nodes", token, LISTING)


def test_given_an_edited_token_then_it_is_refused() -> None:
    token = page_tokens.seal("cluster-nodes", LISTING, page_tokens.Position("sm-1", 20))
    raw = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    raw[10] ^= 1
    edited = base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")

    with pytest.raises(InvalidRequest) as refused:
        page_tokens.open_token("cluster-nodes", edited, LISTING)
    assert refused.value.details == [{"field": "nextToken"}]


def test_given_a_filter_then_scan_fills_the_page_across_sagemaker_pages_without_skipping_or_repeating() -> None:
    items = [f"{'a' if n % 3 else 'b'}{n}" for n in range(10)]  # b0 a1 a2 b3 a4 a5 b6 a7 a8 b9

    def fetch(token: str | None, size: int) -> tuple[list[str], str | None]:
        start = int(token or 0)
        end = start + size
        return items[start:end], (str(end) if end < len(items) else None)

    seen: list[str] = []
    position: page_tokens.Position | None = page_tokens.Position(None, 4)
    while position is not None:
        page, position = page_tokens.scan(
            fetch, position, max_results=2, fresh_size=4, item_id=str, keep=lambda i: i.startswith("a")
        )
        seen += page
    assert seen == [i for i in items if i.startswith("a")]
