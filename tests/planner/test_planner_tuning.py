"""The planner's tuning constants live in one record, ``planner/tuning.py``: a module-level number
anywhere else in the planner is one of the facts named here, so a new knob cannot hide in a stage."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from kafka_balancer import planner
from kafka_balancer.planner.tuning import TUNING, Tuning

# Module-level numbers that are facts, not knobs: tolerances, seeds, a sentinel, the CPU cost model,
# the documented size limit, a goal's definition, and switches between two implementations that give
# the same result (each tested on both sides).
FACTS = {
    "base/arrays.py": {"RADIX_FROM"},
    "base/log_dirs.py": {"_EPS"},
    "base/measures.py": {"EPS", "TOPIC_LEADER_MAX_CV"},
    "base/state.py": {"MAX_TOPIC_BROKER_CELLS"},
    "catalogue.py": {"CPU_PER_BYTE_IN", "CPU_PER_BYTE_OUT", "FOLLOWER_CPU_SHARE"},
    "distribution/topic_chains.py": {"PAIR_TABLE_MAX"},
    "finishing/detours.py": {"LEADERSHIP"},
    "finishing/rebuild.py": {"SEED"},
    "capacity/leadership_room.py": {"TINY"},
    "capacity/make_room.py": {"TOL"},
    "capacity/search.py": {"TOL", "RESTART_SEED"},
    "capacity/solver.py": {"TINY"},
}


def _numeric_constants(path: Path) -> set[str]:
    """Module-level UPPER_CASE names bound to an arithmetic expression of literals."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        target, value = None, None
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, value = node.target.id, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        if target is None or value is None or not target.lstrip("_").isupper():
            continue
        nodes = list(ast.walk(value))
        arithmetic = all(
            isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop)) for n in nodes
        )
        if arithmetic and all(isinstance(n.value, (int, float)) for n in nodes if isinstance(n, ast.Constant)):
            found.add(target)
    return found


def test_every_planner_number_outside_the_record_is_a_named_fact() -> None:
    root = Path(planner.__file__).parent
    stray = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel == "tuning.py":
            continue
        extra = _numeric_constants(path) - FACTS.get(rel, set())
        if extra:
            stray[rel] = sorted(extra)
    assert stray == {}


def test_the_record_is_frozen_and_every_knob_is_a_positive_number() -> None:
    fields = dataclasses.fields(Tuning)
    assert len(fields) > 50
    for f in fields:
        value = getattr(TUNING, f.name)
        assert isinstance(value, (int, float)), f.name
        assert value > 0, f.name
    with pytest.raises(dataclasses.FrozenInstanceError):
        TUNING.far_turns = 3  # type: ignore[misc]
