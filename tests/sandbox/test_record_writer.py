"""The sandbox's RecordWriter queues at most QUEUED_BYTES by default: a large write waits for room
instead of holding records queued past librdkafka's 5-minute delivery timeout (bench.real_scale's 1 GB
write into 11,000 partitions failed with MSG_TIMED_OUT under librdkafka's own queue of 100,000 records)."""

from __future__ import annotations

from kafka_balancer.sandbox.ports import free_port
from kafka_balancer.sandbox.traffic import QUEUED_BYTES, RecordWriter, payload

RECORD_BYTES = 4096


def test_a_writer_queues_no_more_than_its_bound_while_the_brokers_take_nothing() -> None:
    writer = RecordWriter(f"127.0.0.1:{free_port()}", record_bytes=RECORD_BYTES)  # nobody listens there
    queued = 0
    try:
        while True:  # produce() itself (send() would wait for room that never comes)
            writer.producer.produce("t", value=payload(b"k", RECORD_BYTES), key=b"k", partition=0)
            queued += RECORD_BYTES
    except BufferError:
        pass
    finally:
        writer.producer.purge()
        writer.producer.flush(0)
    assert QUEUED_BYTES // 2 < queued <= QUEUED_BYTES, f"queued {queued} bytes, bound {QUEUED_BYTES}"
