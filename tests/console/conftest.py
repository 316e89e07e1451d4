"""The console suite: Debian's Chromium, driven by Playwright, against the console the sandbox serves at ``/console/``.

One sandbox for the session (``tests/conftest.py``), one browser; each test opens a new signed-in tab. Chromium is
``/usr/bin/chromium`` (Debian's ``chromium`` package, which ``make test`` installs through apt when missing;
``INSTANTSTART_CHROMIUM`` points elsewhere). Playwright never downloads a browser of its own here. Screenshots go
to ``INSTANTSTART_SCREENSHOTS`` (default ``.test-logs/console-screenshots``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("INSTANTSTART_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(os.environ.get("INSTANTSTART_SCREENSHOTS", ROOT / ".test-logs" / "console-screenshots"))
CHROMIUM_ARGS = [
    # a closed network: no background connections, no component or sync traffic
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP = {"width": 1280, "height": 800}
NARROW = {"width": 390, "height": 844}


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium (a fresh profile: Playwright starts each browser with a new user data directory)."""
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).is_file(), f"{CHROMIUM} is missing: `make test` installs Debian's chromium package"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def console(browser: Any, sandbox: Any) -> Iterator[Any]:
    """A tab at the sandbox's console, signed in (the sign-in page's button), at 1280x800.

    Fails the test on any error the page logs (an uncaught exception, a failed module load, a CSP violation).
    """
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.goto(sandbox.console_url)
    page.get_by_role("button", name="Sign in to the sandbox").click()
    page.get_by_role("heading", name="Clusters", level=1).wait_for()
    yield page
    context.close()
    assert [p for p in problems if not expected_console_error(p)] == []


def expected_console_error(problem: str) -> bool:
    """Chromium logs every 4xx answer of a fetch as a console error: the tests provoke 422s and 409s on purpose."""
    return "Failed to load resource: the server responded with a status of 4" in problem


def shot(page: Any, name: str) -> Path:
    """Save a full-page screenshot ``<name>.png`` in the screenshot folder; its path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
