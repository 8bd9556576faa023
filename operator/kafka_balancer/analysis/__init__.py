"""Load analysis on Apache Spark: samples -> load snapshot. The only package importing pyspark."""
