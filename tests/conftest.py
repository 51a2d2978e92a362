"""Shared fixtures for the kit's own tests."""

from __future__ import annotations

import pytest
import torch

from attnkit.book import BOOK_INPUTS


@pytest.fixture
def book_inputs() -> torch.Tensor:
    return torch.from_numpy(BOOK_INPUTS.copy())


@pytest.fixture(scope="session")
def verdict_text() -> str:
    from attnkit_data import read_verdict

    return read_verdict()


def chromium_flags(profile: str, window: str = "1200,1500") -> list[str]:
    """Headless Chromium that reaches nothing but loopback, with a throwaway profile."""
    return [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        f"--user-data-dir={profile}",
        f"--window-size={window}",
    ]
