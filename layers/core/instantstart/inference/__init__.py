"""Inference on the cluster: model downloads into its storage and self-managed vLLM/SGLang deployments."""
