"""A move whose target broker is missing from the cluster metadata (never started, removed, or down
and holding nothing) waits for it, and after stuckAfterSeconds is reported stuck, its reason naming
the broker and how long it has been missing (issue 55). Against the emulator over TCP, on its clock."""

from __future__ import annotations

from kafka_balancer.executor import ExecutionState, Executor, ExecutorOptions, MemoryExecutionStore, Progress

from executor.harness import cluster_model, spread_plan

STUCK_AFTER = 30


def _missing(broker: int, seconds: int) -> str:
    return f"target broker {broker} has been missing from the metadata for {seconds} s (stuckAfterSeconds 30)"


def test_a_move_onto_a_broker_that_never_registers_is_stuck_saying_so_and_keeps_waiting(emulator, connect) -> None:
    model = cluster_model(brokers=5, partitions={"orders": 12}, size=1e6)
    cluster = emulator(model)
    plan = spread_plan(model, onto=[9, 4], every=2)  # broker 9 is in no metadata, ever
    onto_9 = sorted(f"{t.topic}-{t.partition}" for t in plan.partitions if 9 in t.replicas)
    seen: list[Progress] = []
    executor: list[Executor] = []

    def watch(p: Progress) -> None:
        seen.append(p)
        if p.elapsed_seconds >= 4 * STUCK_AFTER:
            executor[0].request_stop()  # the run never gives up by itself: a user stops it

    options = ExecutorOptions(poll_interval_seconds=1.0, stuck_after_seconds=STUCK_AFTER)
    executor.append(Executor(connect(cluster), plan, MemoryExecutionStore(), options, clock=cluster, on_progress=watch))
    result = executor[0].run()

    assert onto_9
    # Before stuckAfterSeconds: waiting, with the blocker's reason, not stuck.
    early = [p for p in seen if p.elapsed_seconds < STUCK_AFTER - 2 and p.blocked]
    assert early
    assert all(p.stuck == () for p in early)
    assert all(p.blocked == dict.fromkeys(onto_9, "target broker 9 is offline") for p in early)
    # After it: stuck, each move named with the broker and how long it has been missing, kept up to date.
    late = [p for p in seen if p.elapsed_seconds >= STUCK_AFTER + 2 and p.state is ExecutionState.MOVING_REPLICAS]
    assert late
    for p in late:
        assert p.stuck == tuple(onto_9)
        assert set(p.blocked) == set(onto_9)
        shown = {int(why.split(" for ")[1].split(" s ")[0]) for why in p.blocked.values()}
        assert len(shown) == 1
        assert p.blocked[onto_9[0]] == _missing(9, shown.pop())
    durations = [int(p.blocked[onto_9[0]].split(" for ")[1].split(" s ")[0]) for p in late]
    assert durations == sorted(durations)
    assert durations[-1] >= 3 * STUCK_AFTER
    # The other moves went on; these waited until the stop, never given up.
    assert result.state is ExecutionState.STOPPED, result.reason
    assert result.pending == onto_9
    assert result.dead == {}
    others = sorted(f"{t.topic}-{t.partition}" for t in plan.partitions if 9 not in t.replicas)
    assert others
    assert sorted(result.completed) == others
    assert result.stuck == onto_9


def test_a_stuck_move_onto_a_missing_broker_goes_on_when_it_registers(emulator, connect) -> None:
    model = cluster_model(brokers=6, used=5, partitions={"orders": 12}, size=1e6)
    cluster = emulator(model)
    cluster.stop_broker(6)  # down and holding nothing: not in the metadata
    plan = spread_plan(model, onto=[6], every=3)
    onto_6 = sorted(f"{t.topic}-{t.partition}" for t in plan.partitions)
    seen: list[Progress] = []
    said: list[str] = []

    def watch(p: Progress) -> None:
        seen.append(p)
        if cluster.state.brokers[6].alive:
            return
        said.extend(why for why in p.blocked.values() if why == _missing(6, 2 * STUCK_AFTER))
        if said or p.elapsed_seconds >= 4 * STUCK_AFTER:
            cluster.start_broker(6)

    options = ExecutorOptions(poll_interval_seconds=1.0, stuck_after_seconds=STUCK_AFTER)
    result = Executor(connect(cluster), plan, MemoryExecutionStore(), options, clock=cluster, on_progress=watch).run()

    assert said == [_missing(6, 2 * STUCK_AFTER)] * len(onto_6)
    stuck = [p for p in seen if p.stuck]
    assert stuck
    assert stuck[-1].stuck == tuple(onto_6)
    assert result.state is ExecutionState.COMPLETED, result.reason
    assert sorted(result.completed) == onto_6
    assert result.stuck == []
    assert seen[-1].stuck == ()
