# Two entry points for a fresh machine: `make demo` and `make test`. Both build .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv browser container-tools image image-base debian-base kafka kube-binaries kube-node gitops-tools prometheus-tools test test-node test-kafka-versions test-under-load lint typecheck contracts pytest demo bench crds clean

venv: $(STAMP)

# Rebuilt only when pyproject.toml or constraints.txt changes; the stamp keeps repeated runs fast.
# constraints.txt holds the versions last tested, so a fresh clone installs what passed.
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: venv
	$(BIN)/mypy

contracts: venv
	$(BIN)/lint-imports

# Debian packages the tests need, installed once when missing, with sudo when not root:
# $(call apt_install,COMMANDS,PACKAGES) installs PACKAGES unless every one of COMMANDS is found.
# The lock timeout lets two builds on one machine wait for each other instead of failing.
define apt_install
@for c in $(1); do command -v $$c >/dev/null 2>&1 || missing=1; done; [ -z "$$missing" ] || { \
  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
  $$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq && \
  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends $(2); }
endef

# Debian's headless Chromium: the tests open the HTML report in it (Java 17 for Spark is on the machine).
browser:
	$(call apt_install,chromium,chromium)

# What builds and runs the image (podman with runc: crun fails on hybrid cgroup v1 hosts; debootstrap
# makes the base image where no registry is reachable) and what a Kubernetes node runs it with
# (containerd, runc, the CNI bridge plugins, and nft for kube-proxy's nftables mode).
# /usr/sbin is not on every user's PATH: the commands are looked up there too.
CONTAINER_PACKAGES := podman runc debootstrap containerd containernetworking-plugins nftables
container-tools:
	$(call apt_install,podman runc debootstrap containerd nft /usr/lib/cni/bridge,$(CONTAINER_PACKAGES))

# The Apache Kafka versions the product supports (README "Supported Kafka versions"), oldest first: the
# newest 3.x KRaft release and 4.x up to the newest Maven Central serves. For each, the broker's jars and a
# log4j2 provider for SLF4J, Kafka's own command-line tools and kafka-storage's test jar with
# LocalTieredStorage, from Maven Central with Maven: kafka-runtime/pom.xml lists them, the dependency
# plugin copies them into build/kafka/<version>/libs, once per version (stamped; a version dropped from
# the list is deleted). The tests and the demo run real KRaft brokers from these jars
# (kafka_balancer.sandbox.real; KAFKA_VERSION there unless told otherwise). LocalTieredStorage is in
# kafka-storage's test jar up to Kafka 4.3 and in its test-fixtures jar from 4.4 on (-Dkafka.testFixtures).
# Debian's maven (and a Java 17 runtime) are installed when missing, with sudo when not root.
KAFKA_VERSIONS := 3.9.2 4.3.1 4.4.0
KAFKA_DIR := build/kafka
kafka: $(foreach v,$(KAFKA_VERSIONS),$(KAFKA_DIR)/$(v)/.fetched)
	@[ -L $(KAFKA_DIR) ] || for d in $(KAFKA_DIR)/*/; do v=$$(basename $$d); \
	  case " $(KAFKA_VERSIONS) " in *" $$v "*) ;; *) echo "make kafka: $$v is not listed, deleting $$d"; rm -rf $$d;; esac; done

$(KAFKA_DIR)/%/.fetched: kafka-runtime/pom.xml
	$(call apt_install,java mvn,openjdk-17-jre-headless maven)
	rm -rf $(KAFKA_DIR)/$*/libs
	case $* in 3.*|4.[0-3].*) fixtures=;; *) fixtures=-Dkafka.testFixtures;; esac; \
	mvn -q -B -Dstyle.color=never -f kafka-runtime/pom.xml -Dkafka.version=$* $$fixtures dependency:copy-dependencies \
	  -DincludeScope=runtime -DoutputDirectory=$(abspath $(KAFKA_DIR)/$*/libs)
	touch $@

# The real Kubernetes API server, etcd and kubectl of the operator's tests, built from Go module sources
# with the machine's Go (1.26, no GOTOOLCHAIN needed; kube/go.mod says which versions, and why a wrapper
# module) into build/ (ignored), static and stripped as Kubernetes releases them. The tests type the
# users' commands with this kubectl, never /usr/bin/kubectl. The first build costs about 7.5 CPU-minutes
# (README); the stamp skips it while kube/go.* are unchanged.
KUBE_BIN := build/kube/bin
KUBE_STAMP := $(KUBE_BIN)/.built
KUBE_LDFLAGS = -s -w -X k8s.io/component-base/version.gitVersion=$$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
KUBE_GO = cd kube && CGO_ENABLED=0 go build -trimpath

kube-binaries: $(KUBE_STAMP)

$(KUBE_STAMP): kube/go.mod kube/go.sum
	@command -v go >/dev/null 2>&1 || { echo "kube-binaries: Go 1.26 or newer is needed (kube/go.mod)" >&2; exit 1; }
	$(KUBE_GO) -ldflags "$(KUBE_LDFLAGS)" -o ../$(KUBE_BIN)/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
	$(KUBE_GO) -ldflags "$(KUBE_LDFLAGS)" -o ../$(KUBE_BIN)/kubectl k8s.io/kubernetes/cmd/kubectl
	$(KUBE_GO) -ldflags "-s -w" -o ../$(KUBE_BIN)/etcd go.etcd.io/etcd/server/v3
	touch $@

# The users' own tools, which the tests run (tests/go_tools.py), each built from its Go module under tools/
# (fetched from the Go module proxy; go.sum pins every module) into build/tools/bin, once: the stamps skip
# the build while the module's files are unchanged, and Go's build cache persists between clean clones on
# one machine.
# - gitops-health (tools/gitops): Flux's kstatus, status poller, CEL health evaluator and `wait: true`
#   check, and Argo CD's health scripts in gopher-lua with Argo CD's VM setup. About 3 CPU-minutes cold.
# - promtool, prometheus and promql-series (tools/prometheus): github.com/prometheus/prometheus without its
#   cloud service discoveries (-tags remove_all_sd: static and file targets are all the tests use) and
#   without its web UI assets (built only with -tags builtinassets; the API and rule evaluation need
#   none). About 12 CPU-minutes cold (README).
TOOLS_BIN := build/tools/bin
GITOPS_STAMP := $(TOOLS_BIN)/.gitops-built
PROMETHEUS_STAMP := $(TOOLS_BIN)/.prometheus-built
GO_BUILD := CGO_ENABLED=0 go build -trimpath -ldflags "-s -w"

gitops-tools: $(GITOPS_STAMP)

$(GITOPS_STAMP): tools/gitops/go.mod tools/gitops/go.sum $(wildcard tools/gitops/*.go)
	@command -v go >/dev/null 2>&1 || { echo "gitops-tools: Go 1.26 or newer is needed (tools/gitops/go.mod)" >&2; exit 1; }
	cd tools/gitops && $(GO_BUILD) -o ../../$(TOOLS_BIN)/gitops-health .
	touch $@

prometheus-tools: $(PROMETHEUS_STAMP)

$(PROMETHEUS_STAMP): tools/prometheus/go.mod tools/prometheus/go.sum $(wildcard tools/prometheus/*/*.go)
	@command -v go >/dev/null 2>&1 || { echo "prometheus-tools: Go 1.26.7 or newer is needed (tools/prometheus/go.mod)" >&2; exit 1; }
	cd tools/prometheus && version=$$(go list -m -f '{{.Version}}' github.com/prometheus/prometheus) && \
	  CGO_ENABLED=0 go build -trimpath -tags remove_all_sd -o ../../$(TOOLS_BIN)/ \
	    -ldflags "-s -w -X github.com/prometheus/common/version.Version=$$version" \
	    github.com/prometheus/prometheus/cmd/promtool github.com/prometheus/prometheus/cmd/prometheus ./promql-series
	touch $@

# The rest of a Kubernetes node, from the same k8s.io/kubernetes module as the API server: kubelet,
# kube-controller-manager, kube-scheduler and kube-proxy, and the pod sandbox's pause program (kube/pause:
# no registry serves registry.k8s.io/pause here), as an image archive for containerd. tests/node runs
# them with Debian's containerd, runc and CNI plugins (container-tools). README gives its first build's
# cost, most of the code shared with the API server's build; the stamps skip it while kube/go.* and
# kube/pause are unchanged.
KUBE_NODE_STAMP := $(KUBE_BIN)/.node-built
PAUSE_IMAGE := localhost/kafka-balancer-pause:1
PAUSE_ARCHIVE := build/kube/pause.tar

kube-node: $(KUBE_NODE_STAMP) $(PAUSE_ARCHIVE)

$(KUBE_NODE_STAMP): kube/go.mod kube/go.sum kube/pause/main.go $(KUBE_STAMP)
	$(KUBE_GO) -ldflags "$(KUBE_LDFLAGS)" -o ../$(KUBE_BIN)/kubelet k8s.io/kubernetes/cmd/kubelet
	$(KUBE_GO) -ldflags "$(KUBE_LDFLAGS)" -o ../$(KUBE_BIN)/kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
	$(KUBE_GO) -ldflags "$(KUBE_LDFLAGS)" -o ../$(KUBE_BIN)/kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
	$(KUBE_GO) -ldflags "$(KUBE_LDFLAGS)" -o ../$(KUBE_BIN)/kube-proxy k8s.io/kubernetes/cmd/kube-proxy
	$(KUBE_GO) -ldflags "-s -w" -o ../$(KUBE_BIN)/pause ./pause
	touch $@

$(PAUSE_ARCHIVE): $(KUBE_NODE_STAMP) | container-tools
	tar -C $(KUBE_BIN) -cf $@.rootfs pause
	podman import -q --change 'ENTRYPOINT ["/pause"]' $@.rootfs $(PAUSE_IMAGE) && rm -f $@.rootfs
	rm -f $@ && podman save -q -o $@ $(PAUSE_IMAGE)

# The operator image, built from Dockerfile with podman (runc, host network: no bridge or NAT rule is
# made on the build machine). The Dockerfile's base (its BASE_IMAGE default) is used when it is here
# or can be pulled; where no registry is reachable, an equivalent base is made from Debian's packages
# (debootstrap of bookworm: Python 3.11 with venv and pip, as in the python slim image) and passed in.
# pip in the build uses this machine's pip configuration and CA bundle (e.g. a proxy's CA), mounted
# read-only for the build only: nothing of them is in the image. The stamp skips the build while the
# files COPY'd into the image are unchanged; `podman save` writes the archive a node imports.
IMAGE := localhost/kafka-balancer:$(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
IMAGE_DIR := build/image
IMAGE_STAMP := $(IMAGE_DIR)/.built
IMAGE_ARCHIVE := $(IMAGE_DIR)/kafka-balancer.tar
PUBLIC_BASE := $(shell sed -n 's/^ARG BASE_IMAGE=//p' Dockerfile)
DEBIAN_BASE := localhost/kafka-balancer-base:bookworm
DEBIAN_BASE_ARCHIVE := $(IMAGE_DIR)/debian-base.tar
DEBIAN_MIRROR ?= http://deb.debian.org/debian
PODMAN := podman --runtime runc
HOST_PIP_CONFIG := $(foreach f,$(sort /etc/pip.conf $(PIP_CERT) /etc/ssl/certs/ca-certificates.crt),$(if $(wildcard $f),-v $f:$f:ro))

image: $(IMAGE_STAMP)

$(IMAGE_STAMP): Dockerfile .dockerignore pyproject.toml constraints.txt README.md $(shell find operator -type f ! -path '*/__pycache__/*' ! -path '*.egg-info/*') | container-tools
	$(MAKE) --no-print-directory image-base
	$(PODMAN) build --network host --build-arg BASE_IMAGE=$$(cat $(IMAGE_DIR)/base) $(HOST_PIP_CONFIG) -t $(IMAGE) .
	rm -f $(IMAGE_ARCHIVE) && podman save -q -o $(IMAGE_ARCHIVE) $(IMAGE)
	@echo "image: $(IMAGE) built on $$(cat $(IMAGE_DIR)/base), $$(podman image inspect -f '{{.Size}}' $(IMAGE)) bytes"
	touch $@

# Writes the base to build on into build/image/base: the public one when it is here or can be pulled,
# else the Debian base.
image-base: | container-tools
	@mkdir -p $(IMAGE_DIR); if podman image exists $(PUBLIC_BASE) || podman pull -q $(PUBLIC_BASE) >/dev/null 2>&1; \
	then echo $(PUBLIC_BASE) > $(IMAGE_DIR)/base; \
	else echo "image: $(PUBLIC_BASE) cannot be pulled: building on $(DEBIAN_BASE)"; \
	  $(MAKE) --no-print-directory debian-base && echo $(DEBIAN_BASE) > $(IMAGE_DIR)/base; fi

# The Debian base: made once per machine (podman keeps it, as Go keeps its build cache), from the archive
# debootstrap writes when there is none.
debian-base: | container-tools
	podman image exists $(DEBIAN_BASE) || { [ -f $(DEBIAN_BASE_ARCHIVE) ] || $(MAKE) --no-print-directory \
	  $(DEBIAN_BASE_ARCHIVE); podman import -q --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' \
	  $(DEBIAN_BASE_ARCHIVE) $(DEBIAN_BASE); }

$(DEBIAN_BASE_ARCHIVE): | container-tools
	mkdir -p $(IMAGE_DIR)
	rootfs=$$(mktemp -d /tmp/kafka-balancer-base.XXXXXX) && trap 'rm -rf "$$rootfs"' EXIT && \
	debootstrap --variant=minbase \
	  --include=python3,python3-venv,python3-pip,python-is-python3,ca-certificates,netbase,tzdata \
	  bookworm "$$rootfs" $(DEBIAN_MIRROR) && \
	printf 'deb %s %s main\n' $(DEBIAN_MIRROR) bookworm $(DEBIAN_MIRROR) bookworm-updates \
	  http://deb.debian.org/debian-security bookworm-security > "$$rootfs/etc/apt/sources.list" && \
	chroot "$$rootfs" apt-get clean && rm -rf "$$rootfs"/var/lib/apt/lists/* "$$rootfs"/var/cache/apt/*.bin && \
	tar --numeric-owner -C "$$rootfs" -cf $@.tmp . && mv $@.tmp $@

# Two pytest-xdist workers: much of the suite waits on JVMs, sockets and subprocesses, so two run
# side by side on a 2-core machine. One real Kafka cluster and one Spark session serve the run: the
# tests on each are an xdist group (tests/conftest.py), run by one worker (--dist loadgroup), which
# alone starts it. Every server picks free ports of its own (sandbox/ports.py).
# PYTEST_WORKERS=0 runs the suite in one process. tests/image runs the image (make image).
PYTEST_WORKERS ?= 2
pytest: venv browser kafka kube-binaries gitops-tools prometheus-tools image
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --ignore=tests/node

# The tests that hold the product and the emulator to each Kafka version, on every version of
# KAFKA_VERSIONS (`make test` runs them on the oldest and on the main test cluster's; tests/real_kafka.py).
KAFKA_VERSION_TESTS := tests/kafka/test_conformance.py tests/realkafka/test_executor_real.py
test-kafka-versions: venv kafka
	KAFKA_BALANCER_TEST_VERSIONS=all $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup $(KAFKA_VERSION_TESTS)

test: lint typecheck contracts pytest

# `make test` beside two CPU-bound processes for its whole duration: the suite must be as green on a busy
# machine as on an idle one (.ci/under_load). Three runs in a row, each from a fresh clone of HEAD:
#   make test-under-load UNDER_LOAD_ARGS="--runs 3 --fresh-clone"
UNDER_LOAD_ARGS ?=
test-under-load:
	.ci/under_load $(UNDER_LOAD_ARGS)

# The chart on a real Kubernetes node (tests/node: README's "Installing on a real cluster"), apart
# from `make test`: its first build (kube-node) and its run would take a fresh clone's `make test`
# past an hour on CI's two cores (README gives the figures). Needs root (namespaces, mounts, cgroups).
test-node: venv kafka kube-binaries kube-node image
	$(BIN)/python -m pytest -n 0 tests/node

demo: venv kafka
	$(BIN)/kafka-balancer demo

bench: venv kafka
	$(BIN)/python -m bench.run_all

# CRDs and their field reference are generated from the models; the chart ships the same files.
crds: venv
	$(BIN)/kafka-balancer crds crds --docs docs/crds.md
	cp crds/*.yaml charts/kafka-balancer/crds/

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache build/kafka build/kube build/tools
