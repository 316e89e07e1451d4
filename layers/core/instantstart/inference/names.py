"""The names every inference object shares: the engines' pinned images and ports, their health path, and the
labels (with the managed-by value) that select a download, a deployment's workers or its router.

:mod:`instantstart.inference.builders` re-exports these.
"""

from __future__ import annotations

from instantstart.models.inference import Engine

ENGINE_IMAGES = {
    Engine.VLLM: "vllm/vllm-openai:v0.8.5",
    Engine.SGLANG: "lmsysorg/sglang:v0.4.6.post1-cu124",
}
"""The pinned image of each engine (never latest)."""
ENGINE_PORTS = {Engine.VLLM: 8000, Engine.SGLANG: 30000}
"""Default port of each engine's OpenAI-compatible server."""
HEALTH_PATH = "/health"
"""Both engines answer 200 on ``/health`` once the model is loaded."""

LABEL_MODEL_DOWNLOAD = "instantstart.io/model-download"
LABEL_DEPLOYMENT = "instantstart.io/inference-deployment"
LABEL_ENGINE = "instantstart.io/engine"
LABEL_ROLE = "instantstart.io/role"
LABEL_MANAGED = "app.kubernetes.io/managed-by"
MANAGED_BY = "instantstart"
