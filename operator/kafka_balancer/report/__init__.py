"""The HTML report of a balancing run (used by `kafka-balancer demo`): model in, HTML out.

Depends only on the model and the standard library (plus numpy, through the model).
"""

from kafka_balancer.report.html import render_report, write_report
from kafka_balancer.report.loads import METRICS, BrokerLoads, broker_loads
from kafka_balancer.report.placement import planned

__all__ = ["METRICS", "BrokerLoads", "broker_loads", "planned", "render_report", "write_report"]
