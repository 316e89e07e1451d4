"""Client side of InstantStart: the SigV4 HTTP client (:mod:`instantstart_client.api`), the ``instantstart`` CLI
(:mod:`instantstart_client.cli`) and the demo flow (:mod:`instantstart_client.demo`)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("instantstart-serverless")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
