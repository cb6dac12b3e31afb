"""What every lab test shares: no test takes the checkout's own lab lock (.lab/lock), which a real run, or
another test run beside this one, may hold."""
import pytest

from lab import lock


@pytest.fixture(autouse=True)
def own_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(lock, "PATH", tmp_path / "lab.lock")
