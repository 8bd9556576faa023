"""constraints.txt: the versions a clean checkout installs, for `make test` and for the image.

pip only reads the file; these checks catch what pip would not: a dependency added to pyproject.toml
without a pin (it would float to whatever is newest on the day CI runs), a pin the specifiers in
pyproject.toml exclude, and an install path that forgets the file.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for n, raw in enumerate((REPO / "constraints.txt").read_text().splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        assert sep, f"constraints.txt line {n}: {raw!r} is not 'name==version'"
        key = canonicalize_name(name)
        assert key not in pins, f"constraints.txt line {n}: {name} is pinned twice"
        pins[key] = Version(version)
    return pins


def _declared() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra]
    return reqs


def test_every_declared_dependency_is_pinned_inside_its_specifier() -> None:
    pins = _pins()
    for req in _declared():
        key = canonicalize_name(req.name)
        assert key in pins, f"pyproject.toml needs {req}, but constraints.txt does not pin {req.name}"
        assert req.specifier.contains(pins[key], prereleases=True), (
            f"constraints.txt pins {req.name}=={pins[key]}, outside pyproject.toml's {req}"
        )


def test_make_and_the_image_install_with_the_constraints() -> None:
    makefile = (REPO / "Makefile").read_text()
    install = [line for line in makefile.splitlines() if re.search(r"pip install .*-e '\.\[dev\]'", line)]
    assert install, "the Makefile installs the package with its dev extra"
    assert all("-c constraints.txt" in line for line in install), install
    assert re.search(r"^\$\(STAMP\):.*\bconstraints\.txt\b", makefile, re.M), "a changed pin rebuilds the venv"
    dockerfile = (REPO / "Dockerfile").read_text()
    # the dependencies (a layer of their own) and then the package, both at the pinned versions
    installs = re.findall(r"pip install (?!--upgrade pip)[^\n\\&]*", dockerfile)
    assert any(i.rstrip().endswith(" .") for i in installs), installs
    assert any("-r /tmp/requirements.txt" in i for i in installs), installs
    assert all("-c constraints.txt" in i for i in installs), installs
    assert re.search(r"^COPY .*\bconstraints\.txt\b", dockerfile, re.M)
