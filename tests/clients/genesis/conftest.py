"""The fixture every Genesis scene test uses: it skips the test when genesis-world, quadrants or torch is missing
(or fails it under WK_CLIENTS_REQUIRED=1, as CI's client stage sets; runs.py)."""
from __future__ import annotations

import pytest

from tests.clients.genesis.runs import missing, require_installed


@pytest.fixture(scope="session")
def genesis_installed() -> None:
    require_installed(missing())
