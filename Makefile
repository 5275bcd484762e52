# IMBridge — the two commands a fresh machine needs:
#   make demo   install what the build lacks, build, run `imbridge demo` (two sandboxes + a bridge)
#   make test   install what the build lacks, then run every test
SWIFT ?= swift
APT_PACKAGES := libsqlite3-dev

.PHONY: deps build test demo clean

# Installs only the Debian packages that are missing (root or sudo needed the first time).
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO=sudo; \
		$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing; \
	fi

build: deps
	$(SWIFT) build

test: deps
	$(SWIFT) test

demo: deps
	$(SWIFT) build --product imbridge
	$$($(SWIFT) build --show-bin-path)/imbridge demo

clean:
	rm -rf .build
