"""Hard goals: the operation's shape changes, re-placing what may not stay, leadership off brokers
that may not lead, and the repairs of operations that pin partitions (the capacity repair itself is
:mod:`kafka_balancer.planner.capacity`)."""
