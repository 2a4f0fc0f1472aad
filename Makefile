# The two commands of the README: `make demo` and `make test`. Both install what they need on a fresh Debian machine:
# the system packages (Java for Spark, tshark/tcpdump for captures, chromium for the dashboard test, a C compiler and
# the Python headers for the compiled dissector core) and a virtualenv.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEBIAN_PACKAGES := default-jre-headless tshark tcpdump chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test system-packages build-packages clean

demo: $(BIN)/.installed system-packages
	$(BIN)/kafkatap demo

test: $(BIN)/.installed system-packages
	$(BIN)/python -m pytest $(PYTEST_ARGS)

system-packages:
	@missing=""; \
	command -v java >/dev/null || missing="$$missing default-jre-headless"; \
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

# Rebuilt when a compiled module's source changes: the editable install compiles the .pyx files only when installed.
$(BIN)/.installed: pyproject.toml setup.py $(wildcard */*.pyx */*/*.pyx */*/*.pxd) | build-packages
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip download -q --no-deps -d $(VENV)/wheelhouse dissect.cstruct  # for the offline packaging test
	touch $@

clean:
	rm -rf $(VENV) demo-out .pytest_cache .hypothesis
