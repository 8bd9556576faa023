"""Run `kafka-balancer` many times fast: a server that imports the CLI once and forks a child per command.

A fresh interpreter per command costs about a second of imports; a fork costs milliseconds, so a fuzz
test can try hundreds of inputs in a minute. Each child is what ``kafka-balancer ARGS`` is after its
imports: ``main(argv)`` with stdout and stderr in files, limited to ``--memory`` bytes of address space
(RLIMIT_AS, so an input that makes it reach for more gets MemoryError, not the machine's memory), to
``cpu`` seconds of CPU (RLIMIT_CPU: killed by SIGXCPU, however busy the machine is) and killed after
``timeout`` seconds of wall time (a command that waits on nothing). Requests and answers are JSON lines on
stdin and stdout: ``{"argv": [...], "stdout": path, "stderr": path, "cpu": s, "timeout": s}`` ->
``{"code": n, "seconds": s}`` (``code`` -24 when the child used its CPU, -9 when killed at the timeout).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time

from kafka_balancer import cli

COMMANDS = ("plan", "audit", "report", "execute", "stop", "consumers", "sandbox", "analyze", "sample", "snapshot")
# What the commands import when they run, loaded here once so that every child has it already.
PRELOAD = (
    "kafka_balancer.durability",
    "kafka_balancer.consumers",
    "kafka_balancer.kafka.adapter",
    "kafka_balancer.analysis.analyze",
    "kafka_balancer.analysis.audit",
    "kafka_balancer.analysis.consumer_groups",
    "kafka_balancer.analysis.sampler",
)


def _child(request: dict[str, object], memory: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = int(request["cpu"])  # type: ignore[call-overload]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # SIGXCPU at cpu seconds, SIGKILL a second later
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for fd, key in ((1, "stdout"), (2, "stderr")):
        target = os.open(str(request[key]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    code = 70
    try:
        code = cli.main([str(a) for a in request["argv"]])  # type: ignore[attr-defined]
    except SystemExit as stop:  # argparse's usage errors and --help
        code = stop.code if isinstance(stop.code, int) else 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _wait(pid: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -9
        time.sleep(0.005)


def serve(memory: int) -> None:
    for module in COMMANDS:
        cli._load(module)
    for module in PRELOAD:
        __import__(module)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _child(request, memory)
        code = _wait(pid, float(request["timeout"]))
        print(json.dumps({"code": code, "seconds": time.monotonic() - started}), flush=True)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
