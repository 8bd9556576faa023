"""kafka-balancer: keeps Apache Kafka clusters balanced."""

__version__ = "0.1.0"
