"""A multi-broker Kafka protocol emulator for tests, rehearsals and the demo."""
