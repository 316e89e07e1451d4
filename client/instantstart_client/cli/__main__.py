"""``python -m instantstart_client.cli``: the ``instantstart`` command."""

from instantstart_client.cli import main

main()
