# Hangar: `make run` starts the server with its website; `make test` sets up and runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Debian packages the tests drive for real (sandboxes, browsers, protocol peers, load generators).
APT_PACKAGES := git bubblewrap passt mmdebstrap iproute2 nftables util-linux chromium chromium-driver nginx-light wrk xmlsec1 \
	nodejs npm
DATA_DIR ?=

.PHONY: install run test apt-deps lint typecheck pytest bench clean

$(BIN)/hangar: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(BIN)/hangar

install: $(BIN)/hangar

run: install
	$(BIN)/hangar serve $(if $(DATA_DIR),--data-dir $(DATA_DIR))

# Installs only the Debian packages that are missing; needs root (CI runs as root) or sudo.
apt-deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: install
	$(BIN)/mypy

pytest: install apt-deps
	$(BIN)/pytest -q

test: install apt-deps lint typecheck pytest

bench: install apt-deps
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
