"""The sandbox's model answers: one deterministic completion, shaped as each API that serves it answers.

Used by SageMaker ``InvokeEndpoint`` on the inference operator's endpoints (:mod:`instantstart_sandbox.aws.inference`)
and by the engine pods (vLLM, SGLang) behind a Kubernetes Service (:mod:`instantstart_sandbox.kube.proxy`). The text
names who answered, the prompt's SHA-256 prefix and its length, so a test can tell which replica answered which
prompt without a model.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def _prompt(payload: Any, body: bytes) -> str:
    if isinstance(payload, dict) and isinstance(payload.get("prompt"), (str, list)):
        raw = payload["prompt"]
        return raw if isinstance(raw, str) else "\n".join(str(p) for p in raw)
    if isinstance(payload, dict) and isinstance(payload.get("inputs"), str):
        return str(payload["inputs"])
    if isinstance(payload, dict) and isinstance(payload.get("messages"), list):
        return "\n".join(str((m or {}).get("content", "")) for m in payload["messages"] if isinstance(m, dict))
    return body.decode("utf-8", "replace")


def _limit(payload: Any) -> int:
    limit = payload.get("max_tokens") if isinstance(payload, dict) else None
    if not isinstance(limit, int) or limit <= 0:
        limit = (payload.get("parameters") or {}).get("max_new_tokens") if isinstance(payload, dict) else None
    return limit if isinstance(limit, int) and limit > 0 else 16


def completion(endpoint: str, model: str, body: bytes, *, chat: bool = False) -> dict[str, Any]:
    """The deterministic answer to a JSON invocation ``body`` of ``endpoint`` (a SageMaker endpoint or a pod)
    serving ``model``.

    The prompt is ``prompt`` (string or list of strings), ``inputs`` (TGI/LMI style) or the concatenated
    ``messages[].content`` (chat), else the whole body. Shape: ``{"id": "cmpl-<12 hex>", "object":
    "text_completion", "model", "choices": [{"index": 0, "text", "finish_reason": "length"}], "usage":
    {"prompt_tokens", "completion_tokens", "total_tokens"}}``; with ``chat`` the OpenAI chat shape (``"object":
    "chat.completion"``, ``choices[].message`` ``{"role": "assistant", "content"}``). The text names ``endpoint``,
    the prompt's SHA-256 prefix (12 hex) and its length in characters; tokens are counted as whitespace-separated
    words (``max_tokens`` or ``parameters.max_new_tokens`` caps the completion, default 16).

    Raises:
        ValueError: ``body`` is not JSON.
    """
    payload = json.loads(body)
    prompt = _prompt(payload, body)
    digest = hashlib.sha256(prompt.encode()).hexdigest()
    words = f"sandbox completion from {endpoint} for prompt sha256 {digest[:12]} of {len(prompt)} characters".split()
    limit = _limit(payload)
    text = " ".join(words[:limit])
    completion_tokens = min(limit, len(words))
    prompt_tokens = len(prompt.split())
    choice: dict[str, Any] = (
        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
        if chat
        else {"index": 0, "text": text, "finish_reason": "length"}
    )
    return {
        "id": f"{'chatcmpl' if chat else 'cmpl'}-{hashlib.sha256((endpoint + digest).encode()).hexdigest()[:12]}",
        "object": "chat.completion" if chat else "text_completion",
        "model": model,
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
