"""The sandbox's web console paths (``instantstart_sandbox.console``): files, config, local sign-in, headers."""

from __future__ import annotations

import json
from pathlib import Path

from instantstart_sandbox.console import ConsoleSite
from instantstart_sandbox.runner import CREDENTIALS

ROOT = Path(__file__).resolve().parents[2]
SITE = ConsoleSite(ROOT / "console" / "site", "us-west-2", CREDENTIALS)


def test_given_the_console_paths_then_the_files_are_served_with_their_type_and_the_production_security_headers() -> (
    None
):
    status, headers, body = SITE.answer("GET", "/console/", {})
    assert status == 200 and body == (ROOT / "console/site/index.html").read_bytes()
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert (
        "script-src 'self'" in headers["Content-Security-Policy"]
        and "unsafe-inline" not in headers["Content-Security-Policy"]
    )
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["X-Frame-Options"] == "DENY"
    status, headers, _ = SITE.answer("GET", "/console/vendor/preact.module.js", {})
    assert (status, headers["Content-Type"]) == (200, "text/javascript; charset=utf-8")
    assert SITE.answer("GET", "/console", {})[:2] == (301, {"Location": "/console/"})


def test_given_a_path_outside_the_site_or_an_unknown_file_then_404() -> None:
    for path in (
        "/console/../../template.yaml",
        "/console/%2e%2e/template.yaml",
        "/console/nope.js",
        "/console/vendor",
    ):
        assert SITE.answer("GET", path, {})[0] == 404, path
    assert SITE.answer("GET", "/console/../publish_console.py", {})[0] == 404


def test_given_the_config_then_it_says_sandbox_mode_on_this_origin() -> None:
    status, _, body = SITE.answer("GET", "/console/config.json", {})
    assert status == 200
    assert json.loads(body) == {"mode": "sandbox", "apiUrl": "", "region": "us-west-2"}


def test_given_the_local_sign_in_then_only_the_consoles_post_gets_the_sandbox_credentials() -> None:
    assert SITE.answer("GET", "/console/sandbox-session", {})[0] == 405
    assert SITE.answer("POST", "/console/sandbox-session", {})[0] == 403, "a cross-site form post has no such header"
    status, headers, body = SITE.answer("POST", "/console/sandbox-session", {"x-instantstart-console": "sign-in"})
    session = json.loads(body)
    assert status == 200 and "Access-Control-Allow-Origin" not in headers
    assert (session["accessKeyId"], session["secretAccessKey"]) == (
        CREDENTIALS["access_key"],
        CREDENTIALS["secret_key"],
    )
    assert session["sessionToken"] is None and session["expiration"].endswith("Z")
