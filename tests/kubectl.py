"""The real kubectl, as users type it: built from kube/go.mod by `make kube-binaries` (never the
machine's own, which CI's machine may lack or have in another version).

    kubectl(kubeconfig, "apply", "-f", "examples/01-rebalance-manual.yaml")
    kubectl(kubeconfig, "get", "bp", "-o", "json").stdout
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from kube_apiserver import BIN

KUBECTL = BIN / "kubectl"
REPO = BIN.parents[2]  # commands run from the repository's root, as README.md's do


def kubectl(
    kubeconfig: Path, *args: str, stdin: str | None = None, check: bool = True, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``kubectl ARGS`` with ``kubeconfig``; with ``check``, a non-zero exit raises with its output.
    A command with a --timeout of its own (`kubectl wait`) is not cut short (the test's timeout is)."""
    if not KUBECTL.exists():
        raise RuntimeError(f"{KUBECTL} not built: run `make kube-binaries` (see kube/go.mod)")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "KUBECONFIG": str(kubeconfig),
        "HOME": str(kubeconfig.parent),
    }
    result = subprocess.run(
        [str(KUBECTL), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=None if any(a.startswith("--timeout=") for a in args) else timeout,
        check=False,
        cwd=REPO,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return result


def table(text: str) -> list[dict[str, str]]:
    """The rows of kubectl's table output, each cell by its column's header (read by the header's
    offsets: an empty cell, such as PROGRESS before an execution, stays in its column)."""
    lines = text.splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", lines[0])]
    header = lines[0].split()
    ends = [*starts[1:], None]
    return [{h: line[a:b].strip() for h, a, b in zip(header, starts, ends, strict=True)} for line in lines[1:]]
