"""Shared fixtures for keel's end-to-end tests: the built binary and the default model."""
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _cache_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("KEEL_CACHE_DIR", pathlib.Path.home() / ".cache" / "keel"))


@pytest.fixture(scope="session")
def keel_bin() -> str:
    path = pathlib.Path(os.environ.get("KEEL_BIN", ROOT / "build" / "src" / "cli" / "keel"))
    assert path.exists(), f"keel binary not found at {path}; run scripts/build.sh"
    return str(path)


@pytest.fixture(scope="session")
def model_path() -> str:
    path = _cache_dir() / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.exists(), f"default model missing at {path}; run scripts/fetch_model.sh"
    return str(path)
