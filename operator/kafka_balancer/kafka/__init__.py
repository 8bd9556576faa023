"""The Kafka port and its adapter. The only product package importing the Kafka clients."""
