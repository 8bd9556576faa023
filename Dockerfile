# syntax=docker/dockerfile:1
# kafka-balancer operator image.
#   docker build -t kafka-balancer:0.1.0 .
#   make image    # podman; where no registry is reachable, on a base made from Debian's packages
# Runs as a non-root user with a read-only root filesystem: everything it writes goes to /tmp,
# /var/lib/kafka-balancer/spark (Spark local dirs) and /var/lib/kafka-balancer/samples (the sample
# store), which the Helm chart mounts as volumes.

# The base of both stages: Debian bookworm with Python 3.11, venv and pip. `make image` passes a base
# it made from Debian's packages (debootstrap) with --build-arg BASE_IMAGE=... when this one cannot be
# pulled.
ARG BASE_IMAGE=docker.io/library/python:3.11.10-slim-bookworm

# ---- build: resolve and install the package and its dependencies into a virtualenv --------------
FROM ${BASE_IMAGE} AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/kafka-balancer
ENV PATH=/opt/kafka-balancer/bin:$PATH

WORKDIR /src
# The dependencies first, from pyproject.toml at the versions of constraints.txt, so that their layer
# (most of the image) is cached while only the code changes.
COPY pyproject.toml constraints.txt ./
RUN pip install --upgrade pip \
    && python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'], sep='\\n')" \
        > /tmp/requirements.txt \
    && pip install -c constraints.txt -r /tmp/requirements.txt
COPY README.md ./
COPY operator ./operator
# The SparkApplication engine runs the analysis with the package's own cli/analyze.py as its main file,
# at local:///opt/kafka-balancer/kafka_balancer/... (analysis/spark_application.py): link the installed
# package there instead of hard-coding the site-packages path, which names the Python version.
RUN pip install --no-deps -c constraints.txt . \
    && python -m compileall -q /opt/kafka-balancer \
    && ln -s "$(python -c 'import kafka_balancer, os; print(os.path.dirname(kafka_balancer.__file__))')" \
        /opt/kafka-balancer/kafka_balancer

# ---- runtime: Python, a headless Java 17 for Spark, the virtualenv, nothing else ------------------
FROM ${BASE_IMAGE} AS runtime

# Java runs Spark's local engine inside the operator pod (spark.engine=local, the default).
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless tini \
    && rm -rf /var/lib/apt/lists/*

RUN groupadd --system --gid 10001 balancer \
    && useradd --system --uid 10001 --gid balancer --home-dir /tmp --no-create-home --shell /usr/sbin/nologin balancer \
    && mkdir -p /var/lib/kafka-balancer/samples /var/lib/kafka-balancer/spark \
    && chown -R 10001:10001 /var/lib/kafka-balancer

COPY --from=build /opt/kafka-balancer /opt/kafka-balancer

ENV PATH=/opt/kafka-balancer/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    SPARK_LOCAL_DIRS=/var/lib/kafka-balancer/spark \
    KAFKA_BALANCER_SAMPLE_STORE=/var/lib/kafka-balancer/samples \
    KAFKA_BALANCER_METRICS_PORT=9090

VOLUME ["/tmp", "/var/lib/kafka-balancer/spark", "/var/lib/kafka-balancer/samples"]
# Spark and Java create files relative to the working directory (spark-warehouse, derby.log): keep
# that on a writable volume too.
WORKDIR /tmp

# 9090: Prometheus metrics. 8080: kopf's liveness endpoint (/healthz) for the probes.
EXPOSE 9090 8080

USER 10001:10001

# --standalone: one replica, no kopf peering objects (the chart's Deployment uses Recreate).
# The arguments choose the namespaces: --all-namespaces (default) or --namespace=NS, repeated.
ENTRYPOINT ["tini", "--", "kopf", "run", "-m", "kafka_balancer.controller.operator", "--standalone"]
CMD ["--all-namespaces", "--liveness=http://0.0.0.0:8080/healthz"]
