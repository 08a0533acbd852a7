"""The package installs from its built artefacts into a fresh virtual environment, offline, and
``python -m tollwatch`` from that environment works against the real server.

Not collected by ``discover``'s default pattern (it builds and installs, seconds of work): run it
as ``python3 -m unittest discover -s clients/python/tests -p install_check.py -v``. The build
uses only what Debian's python3-setuptools, python3-wheel, python3-pip and python3-venv bring:
an sdist from ``setuptools.build_meta``, a wheel built from that sdist by ``pip wheel
--no-build-isolation --no-index``, then ``pip install --no-index`` of the wheel into a venv.
No package index is asked for anything.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile
from pathlib import Path

from typing import ClassVar

from support import PACKAGE_ROOT, ServerSettings, server_settings

# No configuration file (one may name a local wheel cache or index), no index, no cache: what
# installs has to come from the artefacts built here and from Debian's packages.
OFFLINE = {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1"}


def offline_environment() -> dict[str, str]:
    """This process's environment without its pip settings, and pip told to stay offline."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("PIP_")}, **OFFLINE}


def run(args: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs a step, failing with its whole output when it fails."""
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


class InstallTest(unittest.TestCase):
    settings: ClassVar[ServerSettings]
    work: ClassVar[Path]
    sdist: ClassVar[Path]
    wheel: ClassVar[Path]
    venv: ClassVar[Path]
    python: ClassVar[Path]

    @classmethod
    def setUpClass(cls) -> None:
        cls.settings = server_settings()
        cls.work = Path(tempfile.mkdtemp(prefix="tollwatch-install-"))
        # Built from a copy: an in-tree build would leave build/ and *.egg-info in the checkout,
        # and two runs at once would share them.
        source = cls.work / "source"
        shutil.copytree(
            PACKAGE_ROOT,
            source,
            ignore=shutil.ignore_patterns("__pycache__", "build", "dist", "*.egg-info", ".venv", "venv", "tests", ".mypy_cache"),
        )
        env = offline_environment()
        dist = cls.work / "dist"
        run([sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_sdist({str(dist)!r})"], source, env)
        (cls.sdist,) = dist.glob("*.tar.gz")
        run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "--wheel-dir", dist, cls.sdist], cls.work, env)
        (cls.wheel,) = dist.glob("*.whl")
        cls.venv = cls.work / "venv"
        run([sys.executable, "-m", "venv", cls.venv], cls.work, env)
        cls.python = cls.venv / "bin" / "python"
        run([cls.python, "-m", "pip", "install", "--no-index", "--no-deps", cls.wheel], cls.work, env)

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.work, ignore_errors=True)

    def environment(self) -> dict[str, str]:
        """Only the client's settings: no PYTHONPATH, so the checkout's source cannot stand in."""
        return {
            "PATH": os.environ.get("PATH", ""),
            "TOLLWATCH_URL": self.settings.url,
            "TOLLWATCH_CLIENT_ID": self.settings.client_id,
            "TOLLWATCH_CLIENT_SECRET": self.settings.client_secret,
        }

    def test_the_wheel_holds_the_package_its_type_marker_and_metadata(self) -> None:
        with zipfile.ZipFile(self.wheel) as wheel:
            names = wheel.namelist()
            metadata = next(wheel.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
        self.assertIn("tollwatch/py.typed", names)
        self.assertIn("tollwatch/__main__.py", names)
        self.assertFalse([n for n in names if "tests" in n or n.endswith(".pyc")], names)
        self.assertIn("Name: tollwatch-client", metadata)
        self.assertIn("Requires-Python: >=3.11", metadata)
        self.assertNotIn("Requires-Dist", metadata)

    def test_the_venv_imports_the_installed_package_not_the_checkout(self) -> None:
        probe = "import json, importlib.resources, tollwatch; print(json.dumps([tollwatch.__file__, importlib.resources.files('tollwatch').joinpath('py.typed').is_file(), tollwatch.__version__]))"
        done = run([self.python, "-c", probe], self.work, self.environment())
        location, typed, version = json.loads(done.stdout)
        self.assertTrue(Path(location).resolve().is_relative_to(self.venv.resolve()), location)
        self.assertTrue(typed)
        self.assertEqual(version, "0.1.0")

    def test_python_m_tollwatch_from_the_venv_looks_up_against_the_server(self) -> None:
        seen = subprocess.run(
            [self.python, "-m", "tollwatch", "lookup", self.settings.seen_number, "--timeout", "15"],
            cwd=self.work, capture_output=True, text=True, timeout=120, env=self.environment(),
        )
        self.assertEqual((seen.returncode, seen.stderr), (0, ""), seen.stderr)
        self.assertIn(f"{self.settings.seen_number}  SEEN  ", seen.stdout)
        unseen = subprocess.run(
            [self.python, "-m", "tollwatch", "--json", "ip", "-", "--timeout", "15"],
            input="192.0.2.250\n", cwd=self.work, capture_output=True, text=True, timeout=120, env=self.environment(),
        )
        self.assertEqual(unseen.returncode, 1, unseen.stderr)
        self.assertEqual(json.loads(unseen.stdout)["results"][0]["found"], False)


if __name__ == "__main__":
    unittest.main()
