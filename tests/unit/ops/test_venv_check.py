"""ops/venv.sh: what ops/test, ops/demo and ops/bench take as "installed" (issue 20)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PY310 = Path("/root/.pyenv/versions/3.10.13/bin/python3.10")


def _sh(
    script: str, cwd: Path, venv: Path, python: str = "python3"
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VENV": str(venv), "PYTHON": python}
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail; source {ROOT / 'ops/venv.sh'}; {script}"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _checkout(tmp_path: Path, version: str) -> Path:
    fake = tmp_path / "checkout"
    (fake / "pipeline").mkdir(parents=True)
    shutil.copy(ROOT / "setup.cfg", fake / "setup.cfg")
    (fake / "pipeline" / "__init__.py").write_text(f'__version__ = "{version}"\n')
    return fake


def test_this_checkout_installed_in_its_venv_is_current() -> None:
    venv = Path(sys.prefix)
    result = _sh("installed_current test", ROOT, venv)
    assert result.returncode == 0, result.stderr


def test_another_version_in_the_checkout_is_not_current(tmp_path: Path) -> None:
    fake = _checkout(tmp_path, "99.0")
    result = _sh("installed_current ''", fake, Path(sys.prefix))
    assert result.returncode != 0
    assert "the checkout is 99.0" in result.stderr


def test_importable_from_the_checkout_is_not_installed(tmp_path: Path) -> None:
    # Given an interpreter without sessiondex, run from the checkout (where a bare
    # `import pipeline` would succeed from the source tree)
    base = Path(sys.base_prefix)
    result = _sh("installed_current ''", ROOT, base)
    assert result.returncode != 0
    assert "not installed" in result.stderr


@pytest.mark.skipif(not PY310.exists(), reason=f"no Python 3.10 at {PY310}")
def test_a_venv_of_python_310_is_made_again(tmp_path: Path) -> None:
    venv = tmp_path / "venv310"
    subprocess.run([PY310, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
    fake = _checkout(tmp_path, "0.1.0")
    # PYTHON is 3.10 too, so the rebuild stops at the version check, after removing the venv
    result = _sh("ensure_installed ''", fake, venv, python=str(PY310))
    assert result.returncode == 2
    assert "Python 3.10" in result.stderr and "making it again" in result.stderr
    assert "needs Python 3.11+" in result.stderr
    assert not venv.exists()


def test_every_ops_script_uses_the_check() -> None:
    for name in ("test", "demo", "bench"):
        text = (ROOT / "ops" / name).read_text()
        assert "source ops/venv.sh" in text and "ensure_installed" in text
        assert "import pipeline" not in text
