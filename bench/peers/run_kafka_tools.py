"""Driver for LinkedIn kafka-tools' balance modules, run offline inside its own venv.

    bench/peers/.venvs/kafka-tools/bin/python bench/peers/run_kafka_tools.py MODULE IN.json OUT.json

MODULE is one of ``size``, ``count``, ``rackaware``, ``leader`` (kafka-assigner's balance types).
The Cluster is built in memory (brokers with racks, topics with their replicas, partition sizes),
cloned as kafka-assigner does, and the module runs on the clone; OUT.json gets the new assignment.
"""

import argparse
import json
import sys
import time
from collections import defaultdict

from kafka.tools.assigner.actions.balancemodules.count import ActionBalanceCount
from kafka.tools.assigner.actions.balancemodules.leader import ActionBalanceLeader
from kafka.tools.assigner.actions.balancemodules.rackaware import ActionBalanceRackAware
from kafka.tools.assigner.actions.balancemodules.size import ActionBalanceSize
from kafka.tools.models.broker import Broker
from kafka.tools.models.cluster import Cluster, add_topic_with_replicas

MODULES = {
    "size": ActionBalanceSize,
    "count": ActionBalanceCount,
    "rackaware": ActionBalanceRackAware,
    "leader": ActionBalanceLeader,
}


def main():
    module, source, target = sys.argv[1:4]
    with open(source) as f:
        data = json.load(f)
    cluster = Cluster()
    for b, rack in sorted(data["brokers"].items(), key=lambda kv: int(kv[0])):
        broker = Broker(f"broker-{b}", id=int(b))
        broker.rack = rack
        cluster.add_broker(broker)
    topics = defaultdict(dict)
    sizes = {}
    for t, p, replicas, size in data["partitions"]:
        topics[t][p] = replicas
        sizes[(t, p)] = int(size)
    for t, parts in topics.items():
        add_topic_with_replicas(cluster, t, {"partitions": parts})
    for partition in cluster.partitions([]):
        partition.set_size(sizes[(partition.topic.name, partition.num)])
    clone = cluster.clone()
    args = argparse.Namespace(exclude_topics=[], brokers=None, types=[module])
    started, cpu = time.perf_counter(), time.process_time()
    MODULES[module](args, clone).process_cluster()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    out = [[p.topic.name, p.num, [b.id for b in p.replicas]] for p in clone.partitions([])]
    with open(target, "w") as f:
        json.dump({"seconds": seconds, "cpuSeconds": cpu, "partitions": out}, f)


if __name__ == "__main__":
    main()
