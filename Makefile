# IMBridge — the two commands a fresh machine needs:
#   make demo   install what the build lacks, build, run `imbridge demo` (two sandboxes + a bridge)
#   make test   install what the build lacks, build imbridge in release too (one test runs it), start a
#               throwaway PostgreSQL cluster, run every test, stop it
SWIFT ?= swift
# systemd: only its `systemd-analyze verify`, which a test runs on deploy/imbridge.service.
# chromium: headless, for the status page's browser test (Tests/EndToEndTests/StatusPageBrowserTests.swift).
# prometheus: only its `promtool check rules`, which a test runs on deploy/prometheus/imbridge-alerts.yml.
# The build and the demo need only SQLite's headers; the tests need all four.
BUILD_PACKAGES := libsqlite3-dev
APT_PACKAGES := $(BUILD_PACKAGES) postgresql systemd chromium prometheus

.PHONY: deps build test test-example test-example-sandbox chaos demo docs install clean
PREFIX ?= /usr/local

# Installs only the Debian packages that are missing (root or sudo needed the first time).
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO=sudo; \
		$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing; \
	fi

build:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(BUILD_PACKAGES)"
	$(SWIFT) build

# The PostgreSQL tests need a server: a throwaway cluster (scripts/test-postgres.sh) in a temp dir on a
# free loopback port, stopped and removed afterwards. If it cannot be started the run fails here.
# IMBRIDGE_REQUIRE_BROWSER=1: the browser test fails (instead of skipping) when chromium is missing.
# --traits OTLP: the tests' build has the span exporter (swift-otel), so OTLPTraceTests runs it against a
# receiver; the release build above and `make build`/`demo`/`install` stay without it (docs/operations.md, "Tracing").
# TEST_WIDTH: test cases run at once (Swift Testing's SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH; without
# it every test starts at once, and on two cores the first minute starves tests that wait for their bridge
# with a deadline). Four per core: the tests spend much of their time waiting on sockets and child processes.
# The run's output is also kept in .build/make-test.log; on a failure scripts/test-failures.sh prints what
# failed once more at the end, where a CI that keeps only the last lines of the output shows it.
TEST_WIDTH ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 2) * 4 )))
test: deps
	@pgdir=$$(mktemp -d /tmp/imbridge-pg.XXXXXX); \
	if ! scripts/test-postgres.sh start "$$pgdir"; then \
		echo "make test: FAILED: cannot start the PostgreSQL test cluster (see above)" >&2; rm -rf "$$pgdir"; exit 1; \
	fi; \
	trap 'scripts/test-postgres.sh stop "$$pgdir"; rm -rf "$$pgdir"' EXIT; \
	$(SWIFT) build -c release --product imbridge || exit 1; \
	mkdir -p .build; log=.build/make-test.log; \
	{ IMBRIDGE_RELEASE_BINARY="$$($(SWIFT) build -c release --show-bin-path)/imbridge" \
	  SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(TEST_WIDTH) \
	  IMBRIDGE_TEST_POSTGRES="$$pgdir" IMBRIDGE_REQUIRE_BROWSER=1 $(SWIFT) test --traits OTLP; echo $$? > $$log.status; } 2>&1 | tee $$log; \
	status=$$(cat $$log.status 2>/dev/null || echo 1); \
	if [ "$$status" -ne 0 ]; then scripts/test-failures.sh $$log; exit $$status; fi; \
	$(MAKE) --no-print-directory test-example

# The example app (examples/OrderApp): depends on this checkout by path with `traits: []`, so it builds
# IMCore + IMTesting only and resolves no remote package (works offline on a fresh clone).
test-example:
	cd examples/OrderApp && $(SWIFT) test

# The example's tests with its `Sandbox` trait: IMBridge's `Server` trait on, so the two-backend tests also
# run on the RongCloud and NIM adapters against in-process sandboxes (docs/testing-kit.md, "One test, two
# backends"). Fetches the server's remote packages the first time; a scratch path of its own keeps the
# memory-only build above free of them, and the Package.resolved the run writes (pinning them) is removed,
# or the next memory-only run would fetch every pinned package.
test-example-sandbox:
	cd examples/OrderApp && $(SWIFT) test --traits Sandbox --scratch-path .build-sandbox; status=$$?; rm -f Package.resolved; exit $$status

# The fault campaign (docs/reliability.md): `make chaos` runs the fixed CI seeds, `make chaos SEED=N`
# replays one seed, `make chaos SEEDS=200` runs seeds 1…200 (also SEEDS=A-B or SEEDS=A,B,C). The fault
# kinds known to break the guarantee today are left out unless FAULTS=all (or FAULTS=sigkill,5xx,…).
# It needs PostgreSQL (two-instance topologies) but no browser. With JOBS=N (and SEEDS), N seeds run at a
# time, each in its own process, on one copy of the build; run the same command again on the same build and
# the seeds already passed are skipped (scripts/chaos-lanes.sh; docs/reliability.md, "Long campaigns").
chaos:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(BUILD_PACKAGES) postgresql"
ifeq ($(JOBS),)
	IMBRIDGE_CHAOS_SEED="$(SEED)" IMBRIDGE_CHAOS_SEEDS="$(SEEDS)" IMBRIDGE_CHAOS_FAULTS="$(FAULTS)" IMBRIDGE_CHAOS_PLANS="$(PLANS)" $(SWIFT) test --filter ChaosTests
else
	$(SWIFT) build --build-tests
	IMBRIDGE_CHAOS_FAULTS="$(FAULTS)" scripts/chaos-lanes.sh "$$($(SWIFT) build --show-bin-path)" "$(JOBS)" "$(or $(SEEDS),$(SEED))"
endif

demo:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(BUILD_PACKAGES)"
	$(SWIFT) build --product imbridge
	$$($(SWIFT) build --show-bin-path)/imbridge demo

# The DocC catalogs of the neutral API and the testing kit (Sources/IMCore/IMCore.docc,
# Sources/IMTesting/IMTesting.docc), built with swift-docc-plugin into .build/docs/<Target>.
docs:
	mkdir -p .build/docs
	for target in IMCore IMTesting; do \
		$(SWIFT) package --allow-writing-to-directory .build/docs generate-documentation --target $$target \
			--output-path .build/docs/$$target || exit 1; \
	done

# One self-contained executable (the shipped mappings are compiled in; the Swift runtime is linked
# statically): copy $(PREFIX)/bin/imbridge anywhere.
install:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(BUILD_PACKAGES)"
	$(SWIFT) build -c release --product imbridge --static-swift-stdlib
	install -D -m 0755 "$$($(SWIFT) build -c release --show-bin-path)/imbridge" "$(DESTDIR)$(PREFIX)/bin/imbridge"
	"$(DESTDIR)$(PREFIX)/bin/imbridge" --version

clean:
	rm -rf .build
