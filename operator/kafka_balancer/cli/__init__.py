"""The `kafka-balancer` command line: one module per subcommand, loaded on demand.

Each subcommand module defines ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``.
Loading lazily keeps `kafka-balancer plan` from importing pyspark or kopf.

Every way a command ends is decided here (:func:`main`): the exit status the command returns, or,
for an exception, one line ``<command>: <reason>`` on stderr and exit 2 when the input is at fault
(:class:`CommandError`, a model error, an unreadable file, a document nested too deeply) or 1 when
the cluster or the machine is (Kafka unreachable, a port taken, anything unexpected). Never a
traceback: an unexpected exception is a defect, and its one line names its type.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import sys
from collections.abc import Iterator, Sequence
from typing import NoReturn, Protocol, cast

from kafka_balancer.interrupts import interruption
from kafka_balancer.kafka.client_log import LOGGER_NAME as LIBRDKAFKA_LOGGER

EXIT_FAILED = 1  # the cluster or the machine failed (unreachable, a port taken), or a defect
EXIT_INVALID = 2  # bad input: nothing was changed
REASON_MAX = 1000  # characters of a reason printed (a refused value is quoted, never dumped)

# name -> module under kafka_balancer.cli
SUBCOMMANDS: dict[str, str] = {
    "demo": "demo",
    "plan": "plan",
    "sandbox": "sandbox",
    "snapshot": "snapshot",
    "analyze": "analyze",
    "sample": "sample",
    "execute": "execute",
    "stop": "stop",
    "crds": "crds",
    "consumers": "consumers",
    "audit": "audit",
    "report": "report",
}


class _Subcommand(Protocol):
    HELP: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _load(module: str) -> _Subcommand:
    return cast(_Subcommand, importlib.import_module(f"kafka_balancer.cli.{module}"))


class CommandError(Exception):
    """A command refuses to go on: ``reason`` is the one line shown, ``code`` the exit status."""

    def __init__(self, reason: str, code: int = EXIT_INVALID) -> None:
        super().__init__(reason)
        self.code = code


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error in one line (its default prints the whole usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INVALID, f"{self.prog}: {_one_line(message)} (see {self.prog} --help)\n")


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = _Parser(prog="kafka-balancer", description="Keeps Apache Kafka clusters balanced.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    # Only import the module of the subcommand being run (and all of them for --help).
    wanted = next((a for a in argv if not a.startswith("-")), None)
    for name, module in SUBCOMMANDS.items():
        if wanted in SUBCOMMANDS and name != wanted:
            sub.add_parser(name)
            continue
        command = _load(module)
        command_parser = sub.add_parser(name, help=command.HELP, description=command.HELP)
        command.add_arguments(command_parser)
        command_parser.set_defaults(_run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(args_list).parse_args(args_list)
    try:
        with _librdkafka_lines_off():
            return int(args._run(args))
    except KeyboardInterrupt:
        print(f"{args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # the one place every failure becomes one line
        if interruption(err) is not None:  # Ctrl-C inside a C call (kafka_balancer.interrupts)
            print(f"{args.command}: interrupted", file=sys.stderr)
            return 130
        code, reason = _failure(err)
        cluster = getattr(args, "bootstrap_servers", None)
        if code == EXIT_FAILED and cluster and cluster not in reason:  # which cluster failed
            reason = f"{cluster}: {reason}"
        print(f"{args.command}: {_one_line(reason)}", file=sys.stderr)
        return code


@contextlib.contextmanager
def _librdkafka_lines_off() -> Iterator[None]:
    """The adapter names every Kafka failure in its error; librdkafka's own log lines would repeat it.
    Off for the command only: a process that runs a command in-process (the tests) keeps its logging."""
    logger = logging.getLogger(LIBRDKAFKA_LOGGER)
    was_disabled, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = was_disabled


def _failure(err: Exception) -> tuple[int, str]:
    """The exit status and the reason for an exception a command did not handle itself."""
    from kafka_balancer.model.errors import ModelError  # noqa: PLC0415 - light, and only on failure

    kafka = sys.modules.get("kafka_balancer.kafka.port")  # loaded if a Kafka error can have been raised
    if isinstance(err, CommandError):
        return err.code, str(err)
    if kafka is not None and isinstance(err, kafka.KafkaError):
        return EXIT_FAILED, str(err)
    if isinstance(err, RecursionError):
        return EXIT_INVALID, "the input is nested too deeply"
    if isinstance(err, OSError):  # a file named on the command line; else the network or the machine
        named = err.filename is not None
        return (EXIT_INVALID, f"{err.filename}: {err.strerror or err}") if named else (EXIT_FAILED, str(err))
    if isinstance(err, ModelError | ValueError | OverflowError):
        return EXIT_INVALID, str(err)
    return EXIT_FAILED, f"internal error, {type(err).__name__}: {err}"


def _one_line(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= REASON_MAX else f"{line[: REASON_MAX - 3]}..."


if __name__ == "__main__":
    sys.exit(main())
