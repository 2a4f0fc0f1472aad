# The two commands of the README: `make demo` and `make test`. Both install what they need on a fresh Debian machine:
# the system packages (Java for Spark, tshark/tcpdump for captures, chromium for the dashboard test, a C compiler and
# the Python headers for the compiled dissector core), a virtualenv, and Apache Kafka with its Java clients from Maven
# Central for the samples made against the real broker.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test system-packages build-packages kafka clean

# Apache Kafka (broker, storage tool, Java clients, streams) with every runtime dependency, fetched once by Maven
# (samples/java/pom.xml) into KAFKA_HOME/lib; the Java workloads of samples/java compiled against it into classes/.
KAFKA_VERSION := 4.4.0
KAFKA_HOME := .cache/kafka-$(KAFKA_VERSION)
MVN := mvn -q -B -Dstyle.color=never

demo: $(BIN)/.installed system-packages
	$(BIN)/kafkatap demo

# Two test processes (pytest-xdist): a Spark test keeps about one core busy (its driver plans while the task waits),
# so a second process fills the other core. A test file stays in one process (its module fixtures run once), and the
# files go out in the suite's order, the slow ones first (tests/conftest.py). The fault and fuzz tests run again on
# the pure-Python dissector inside the suite, in a process started as a user selects it
# (tests/dissect/test_pure_python_run.py).
PYTEST_ARGS ?= -n 2 --dist loadfile --no-loadscope-reorder

test: $(BIN)/.installed system-packages kafka
	$(BIN)/python -m pytest $(PYTEST_ARGS)

system-packages:
	@missing=""; \
	command -v java >/dev/null || missing="$$missing default-jre-headless"; \
	command -v javac >/dev/null || missing="$$missing default-jdk-headless"; \
	command -v mvn >/dev/null || missing="$$missing maven"; \
	command -v tshark >/dev/null || missing="$$missing tshark"; \
	command -v tcpdump >/dev/null || missing="$$missing tcpdump"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# What `pip install` needs to compile the dissector core (without them it installs the slower pure-Python one).
build-packages:
	@missing=""; \
	command -v cc >/dev/null || missing="$$missing gcc"; \
	$(PYTHON) -c "import sysconfig,os,sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'],'Python.h')))" \
		|| missing="$$missing python3-dev"; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# Rebuilt when a compiled module's source changes: the editable install compiles the .pyx files, and the .py files a
# .pxd types (Cython's pure-Python mode, setup.py), only when installed.
COMPILED_SOURCES := $(wildcard */*.pyx */*.pxd */*/*.pyx */*/*.pxd) $(wildcard $(patsubst %.pxd,%.py,$(wildcard */*/*.pxd)))
$(BIN)/.installed: pyproject.toml setup.py $(COMPILED_SOURCES) | build-packages
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip download -q --no-deps -d $(VENV)/wheelhouse dissect.cstruct  # for the offline packaging test
	touch $@

kafka: $(KAFKA_HOME)/classes/.compiled

$(KAFKA_HOME)/lib/.fetched: samples/java/pom.xml | system-packages
	rm -rf $(KAFKA_HOME)/lib
	$(MVN) -f samples/java/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
		-DoutputDirectory=$(CURDIR)/$(KAFKA_HOME)/lib
	touch $@

$(KAFKA_HOME)/classes/.compiled: $(KAFKA_HOME)/lib/.fetched $(wildcard samples/java/*.java)
	rm -rf $(KAFKA_HOME)/classes
	javac -nowarn -d $(KAFKA_HOME)/classes -cp '$(KAFKA_HOME)/lib/*' $(wildcard samples/java/*.java)
	touch $@

clean:
	rm -rf $(VENV) demo-out .pytest_cache .hypothesis
