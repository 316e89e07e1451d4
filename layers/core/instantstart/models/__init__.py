"""Pydantic request/response/record models: the one place field names and limits are defined."""
