"""Same plans: the quick slice of ``bench.plan_oracle`` (every 7th random and JBOD case of
``bench.random_operations`` and a few small benchmark clusters) planned as the benchmark plans them,
each plan's fingerprint compared with the checked-in bench/plan_oracle_expected.json. A change that
moves a plan fails here, naming the cases; if it moves them on purpose, its commit says which and why
and rewrites the file (``python -m bench.plan_oracle --write``)."""

from __future__ import annotations

import pytest

from bench.plan_oracle import EXPECTED, cases, changes, expected, run


def test_the_quick_slice_plans_as_the_checked_in_fingerprints_say() -> None:
    quick = [case for case in cases() if case.quick]
    wanted = expected()
    assert {case.name for case in quick} <= wanted.keys(), f"cases without an entry in {EXPECTED}"
    changed = changes(run(quick), wanted)
    if changed:
        pytest.fail(
            f"{len(changed)} of {len(quick)} plans differ from {EXPECTED.name}:\n"
            + "\n".join(changed)
            + "\nIf the change moves these plans on purpose: run `python -m bench.plan_oracle --check` for every"
            " case, say in the commit which plans moved and why, and rewrite the file with"
            " `python -m bench.plan_oracle --write`.",
            pytrace=False,
        )
