# Hangar: `make run` starts the server with its website; `make test` sets up and runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Debian packages the server needs on its host: namespaces, the rigs' image builder, firewall and seccomp filter
# (rigs, confined shell steps and command agents), ffmpeg to transcode engine C's live view, adb to drive phones
# (mobile rigs: an emulator or a device, README, Rigs) and shellcheck for the skills' scan of bundled shell
# scripts. `make run` installs them where it can; where it cannot, `hangar serve` says in one line what is
# unavailable and the command that fixes it.
APT_RUN_PACKAGES := git bubblewrap mmdebstrap iproute2 nftables util-linux libseccomp2 ffmpeg adb shellcheck
# What the tests drive besides: a browser, the SAML peer's signer, each browser engine launched directly on
# the host beside its rig (the engines' conformance tests, the benchmark's baseline), and PostgreSQL's server
# (the tests start a throwaway cluster of their own from its binaries, tests/support/postgres.py). Node.js and npm (the OIDC
# peer, the web client's build) are installed only when the commands are missing, since many machines carry them
# from another source that Debian's npm would conflict with. QEMU boots the KVM probe's tiny guest and the full-VM
# desktop; qemu-utils (qemu-img), mtools and syslinux assemble the desktop's bootable qcow2 without mounting
# anything (scripts/build-desktop-image).
APT_PACKAGES := $(APT_RUN_PACKAGES) chromium xmlsec1 firefox-esr webkit2gtk-driver xvfb xauth socat libnss3-tools postgresql qemu-system-x86 qemu-utils mtools syslinux syslinux-common espeak-ng
# Load generator and peer server for `make bench`, universal-ctags (the code graph's indexing peer), and the desktop
# benchmark's baseline: Xvnc with the desktop pack's window manager and tools run directly on the host.
APT_BENCH_PACKAGES := nginx-light wrk universal-ctags tigervnc-standalone-server openbox xdotool xclip x11-apps x11-utils x11-xserver-utils
# `make run` passes these on to `hangar serve` when given (`make run HOST=0.0.0.0 PORT=9000 SITE_PORT=9001`):
# the data directory, the interface to listen on (default 127.0.0.1), the server's port (8420) and the website's
# (8421).
DATA_DIR ?=
HOST ?=
PORT ?=
SITE_PORT ?=
SERVE_FLAGS = $(if $(DATA_DIR),--data-dir $(DATA_DIR)) $(if $(HOST),--host $(HOST)) $(if $(PORT),--port $(PORT)) $(if $(SITE_PORT),--site-port $(SITE_PORT))
# Compiled modules are kept (under the virtualenv) even where the environment turns bytecode writing off: the suite
# starts hundreds of `hangar` processes, and each would otherwise compile the whole source again (about a second).
KEEP_BYTECODE := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/$(VENV)/pycache

# The web client (web/): built into web/dist, which the server serves at /. Node.js and npm come from Debian where
# the commands are missing.
WEB_SOURCES := $(shell find web/src web/test -type f 2>/dev/null) web/index.html web/vite.config.ts web/tsconfig.json web/package.json

.PHONY: install run test test-postgresql test-packs apt-deps apt-run-deps apt-bench-deps lint typecheck pytest fuzz bench mutate clean web web-test client-types manual-shots

$(BIN)/hangar: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(BIN)/hangar

install: $(BIN)/hangar

run: install
	-@$(MAKE) --no-print-directory apt-run-deps || echo "could not install $(APT_RUN_PACKAGES); the server says what is unavailable"
	-@$(MAKE) --no-print-directory web || echo "could not build the web client; the server's / says how"
	$(KEEP_BYTECODE) $(BIN)/hangar serve$(if $(strip $(SERVE_FLAGS)), $(strip $(SERVE_FLAGS)))

# Installs only the Debian packages that are missing; needs root (CI runs as root) or sudo.
define apt_install
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ "$(2)" = node ] && ! { command -v node && command -v npm; } >/dev/null; then missing="$$missing nodejs npm"; fi; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
endef

apt-deps:
	$(call apt_install,$(APT_PACKAGES),node)

apt-run-deps:
	$(call apt_install,$(APT_RUN_PACKAGES),node)

apt-bench-deps:
	$(call apt_install,$(APT_BENCH_PACKAGES),)

# ruff, then the import contracts of .importlinter: the layers and the parts' order (a change that imports up a
# layer or into another part's private module fails here).
lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy

web/node_modules/.package-lock.json: web/package-lock.json
	cd web && npm ci --no-audit --no-fund --loglevel=error

web/dist/index.html: web/node_modules/.package-lock.json $(WEB_SOURCES)
	cd web && npm run --silent build

web: web/dist/index.html

# The client's unit tests (vitest); the build above type-checks them and the generated op table.
web-test: web/node_modules/.package-lock.json
	cd web && npm test --silent

# Regenerates web/src/generated/ops.ts from the op registry (a unit test fails while the committed one is stale).
client-types: install
	$(BIN)/python -m hangar.server.typed_client

# The rig image packs the tests boot rigs, shell steps and command agents from: the terminal's, each browser
# engine's and the desktop's, in one directory per machine shared by every run and every test process ($HANGAR_TEST_PACKS, default
# ~/.cache/hangar-test/packs). Built here, before the tests, one line of progress per pack: a first run takes
# minutes per pack (mmdebstrap from the Debian mirror); later runs find them built. A failed build says why and
# stops here; running it again retries. Where this host cannot run rigs, nothing is built and those tests skip.
TEST_PACKS := $(or $(HANGAR_TEST_PACKS),$(HOME)/.cache/hangar-test/packs)

test-packs: install apt-deps
	@if why=$$(HANGAR_RIG_PACKS_DIR=$(TEST_PACKS) $(BIN)/hangar rigs check); then \
	  HANGAR_RIG_PACKS_DIR=$(TEST_PACKS) $(KEEP_BYTECODE) $(BIN)/hangar rigs build-pack --all && \
	  $(KEEP_BYTECODE) $(BIN)/python scripts/build-desktop-image --packs $(TEST_PACKS) --images $(TEST_PACKS)/../images >/dev/null; \
	else echo "rig packs not built ($$why): the tests that need them skip"; fi

# The suite runs in TEST_WORKERS parallel processes (pytest-xdist; README, Tests): most tests wait on subprocesses
# (enclosures, Chromium, servers, PostgreSQL), so workers beyond the cores still shorten the run. `--dist loadfile`
# hands out whole files: a file's tests run in one worker, in their order, sharing its module-scoped fixtures (a
# booted desktop whose pointer and display mode one test leaves for the next). `make pytest TEST_WORKERS=0` runs
# it in one process.
TEST_WORKERS ?= 4
PARALLEL = -n $(TEST_WORKERS) --dist loadfile

pytest: install apt-deps web test-packs
	HANGAR_TEST_PACKS=$(TEST_PACKS) $(KEEP_BYTECODE) $(BIN)/pytest -q $(PARALLEL) --durations=40

test: install apt-deps lint typecheck web web-test pytest

# The integration suite with every server and command the tests start keeping its records in PostgreSQL (a fresh
# database per test on the suite's throwaway cluster; tests/support/pg_mode.py). Rigs and browser tests are left
# out (their records are the same stores the rest covers; their cost is the enclosures and Chromium).
PG_SUITE_SKIP = --ignore-glob='tests/integration/test_rigs_*' --ignore-glob='tests/integration/test_web_*' \
  --ignore-glob='tests/integration/*_browser*'
test-postgresql: install apt-deps web test-packs
	HANGAR_TEST_DATABASE=postgresql HANGAR_TEST_PACKS=$(TEST_PACKS) $(KEEP_BYTECODE) $(BIN)/pytest -q $(PARALLEL) \
	  --durations=40 tests/integration $(PG_SUITE_SKIP)

# Retakes the manual's screenshots (src/hangar/site/content/manual/images): the browser tests take them at the
# screens the guides describe; commit the PNGs that changed.
manual-shots: install apt-deps web
	HANGAR_WEB_SHOTS=1 $(BIN)/pytest -q tests/integration/test_web_*.py

# The long fuzz run over every op's arguments and raw frames (`make test` runs a bounded number of examples).
fuzz: install apt-deps
	HANGAR_FUZZ_EXAMPLES=20000 $(BIN)/pytest -q tests/integration/test_fuzz_boundaries.py

# Do the tests catch real bugs? Puts each mutation of bench/mutations.py (a guard removed, or a subtle bug) into a
# scratch copy of the tree, runs the tests that should catch it, and prints the kill rate of each kind and what
# survived; the working tree is never touched. Not part of `make test`. `make mutate MUTATE_ARGS="--only ID"`
# runs some; `--rev REV` measures the suite of an older revision; `--list` lists them.
MUTATE_ARGS ?=

mutate: install apt-deps test-packs
	HANGAR_TEST_PACKS=$(TEST_PACKS) $(BIN)/python bench/mutate.py $(MUTATE_ARGS)

bench: install apt-deps apt-bench-deps
	$(BIN)/pip install -q -e '.[bench]'  # the peers bench_workers.py measures Hangar against
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache web/node_modules web/dist
