# The two set-up commands are `make demo` and `make test`; both install what
# they need. See README.md.
GO ?= go
PKGS := ./...

.PHONY: all build test demo bench bench-faults vet fmt-check ensure-go ensure-postgres ensure-bubblewrap ensure-skopeo ensure-agent-clis ensure-python-venv ensure-chromium ensure-emoji-font ensure-distroot ensure-podman ensure-busyboxroot ensure-tools-image clean screenshots

all: build

ensure-go:
	@command -v $(GO) >/dev/null 2>&1 || { echo "Go 1.26+ is required: https://go.dev/dl/ (or /usr/local/go/bin on PATH)"; exit 1; }
	@$(GO) mod download

ensure-postgres:
	@.ci/ensure-postgres

# The sessions' sandbox (runner/sandbox) is bubblewrap.
ensure-bubblewrap:
	@.ci/ensure-bubblewrap

# skopeo reads pushed snapshot images as an independent client (images tests).
ensure-skopeo:
	@.ci/ensure-skopeo

# A real Debian root (apt-get download + dpkg-deb -x), built once per machine
# outside the clone, for the supervisor's distribution-root session test.
ensure-distroot:
	@.ci/ensure-distroot

# The image is tested (internal/dockerfile's TestImageServes): podman and
# runc from Debian's packages, and a Debian root (mmdebstrap) imported into
# podman once per machine, cached outside the clone, as the base of
# internal/dockerfile/testdata/Containerfile (no registry can be pulled from
# here). About a minute the first time, nothing after; decision 0070.
ensure-podman:
	@.ci/ensure-podman

# A busybox root (no libc, no node), built once per machine outside the
# clone, for the supervisor's tools-image test.
ensure-busyboxroot:
	@.ci/ensure-busyboxroot

# The agents' tools image (decision 0069: the pinned CLIs, node and their
# libraries, by inspect tools build), built once per machine outside the
# clone, for the supervisor's tools-image test. npm's cache, which
# ensure-agent-clis fills, makes it cheap.
ensure-tools-image: ensure-go ensure-agent-clis
	@.ci/ensure-tools-image >/dev/null

# The real-agent end-to-end tests run Codex CLI, OpenCode and Claude Code
# (from npm, at the versions runner/supervisor/presets.go pins).
ensure-agent-clis:
	@.ci/ensure-agent-clis

# The sandbox tests run Debian's Chromium headless in a sandbox (issue 16).
ensure-chromium:
	@.ci/ensure-chromium

ensure-emoji-font:
	@.ci/ensure-emoji-font

# internal/fakepypi's tests run the real pip in venvs (Debian's python3-venv).
ensure-python-venv:
	@.ci/ensure-python-venv

build: ensure-go
	$(GO) build -o bin/inspect ./cmd/inspect

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet: ensure-go
	$(GO) vet $(PKGS)

# The store suite and the end-to-end tests run against SQLite and PostgreSQL.
# The inspecttest tag lets sandboxed test sessions share one warm Go build
# cache (decision 0050); without it the tests pass, only slower.
# The image's local and server targets are built with podman and run
# (internal/dockerfile: both images serve, and a session runs each real
# agent CLI in the local one; about 25 s, 40 s under -race, once the root is
# imported).
# The fault suite (./internal/faults) is listed last. go test runs at most
# -p (the number of CPUs) packages' tests at once and builds and starts them
# in the order listed, so the suite starts only once every other package has
# started: it shares the machine only with the packages still running then,
# in place of an idle CPU, not with the whole run, where its replicas,
# sandboxes and PostgreSQL would push the app's end-to-end tests and its own
# toward their timeouts. Its tests mostly wait (about 80 CPU-seconds in 145 s
# under -race), so they cost the packages beside them little.
test: ensure-go ensure-postgres ensure-bubblewrap ensure-skopeo ensure-agent-clis ensure-python-venv ensure-chromium ensure-distroot ensure-podman ensure-busyboxroot ensure-tools-image fmt-check vet
	$(GO) test -race -count=1 -timeout 30m -tags inspecttest $$($(GO) list $(PKGS) | grep -v '/internal/faults$$') ./internal/faults/

demo: ensure-go ensure-bubblewrap
	$(GO) run ./cmd/inspect-demo

# Benchmarks; results are recorded by hand in BENCHMARKS.md. The webhook
# benchmark runs a fixed 6000 deliveries per side, five times, so its
# percentiles come from enough samples. The snapshot benchmarks (issue 5)
# build this repository with its vendored dependencies in the sandbox, cold
# and from snapshots: one iteration each, several minutes in all. The
# registry egress benchmark (issue 15) runs `go mod download` straight, through
# real sessions' egress and through a warm cache, ten times each, interleaved.
# The base-image benchmark (issue 16) starts an agent on the host's toolchain,
# a three-layer base and a Debian root, ten sessions each, three times.
# The verify workspace benchmark (issue 18) collects a change and writes the
# workspace verify runs on, five times, on this repository at HEAD.
# The service benchmark (issue 16) times a postgres service's setup and
# readiness, cold and from a snapshot, five sessions each. The dashboard's
# sessions list (issue 21) renders over 10,000 sessions, 300 times a page.
# The snapshot session benchmark (issue 35) runs a Go module and a Node
# project cold, on the host and restored from a snapshot, once each (about
# eight minutes, mostly the cold Go builds). Steering and continuation
# (issue 36): the control plane's part with a scripted executor, the
# supervisor's steer to the resume, and one conversation with each real
# CLI through the app (a fresh start, a steer, a continuation; Codex once
# more with an empty layer cache), about four minutes.
bench: ensure-go ensure-postgres ensure-bubblewrap ensure-distroot ensure-tools-image
	$(GO) test -run '^$$' -bench WebhookAck -benchtime 6000x -count 5 ./app/
	$(GO) test -run '^$$' -bench IgnoredCheckRun -benchtime 20000x -count 5 ./app/
	$(GO) test -run '^$$' -bench GoModDownload -benchtime 10x -timeout 30m ./app/
	$(GO) test -run '^$$' -bench RegistryMetadataMemory -benchtime 1x -count 3 ./app/channel/
	$(GO) test -run '^$$' -bench . -benchtime 8000x ./app/store/
	$(GO) test -run '^$$' -bench . ./policy/
	$(GO) test -run '^$$' -bench SessionsList -benchtime 300x ./app/web/
	$(GO) test -run '^$$' -bench 'SessionStart|SnapshotRefreshBytes' -benchtime=1x -timeout 60m ./runner/supervisor/
	$(GO) test -run '^$$' -bench AgentStartOnABaseImage -benchtime=10x -count 3 ./runner/supervisor/
	$(GO) test -run '^$$' -bench VerifyWorkspace -benchtime 5x ./runner/supervisor/
	$(GO) test -run '^$$' -bench ServiceReady -benchtime=5x -timeout 20m ./runner/supervisor/
	$(GO) test -run '^$$' -bench SnapshotSession -benchtime=1x -timeout 30m ./cmd/inspect/
	$(GO) test -run '^$$' -bench ContinuationStart -benchtime=3x ./app/
	$(GO) test -run '^$$' -bench SteerToModel -benchtime=3x ./runner/supervisor/
	$(GO) test -run '^$$' -bench RealCLITalk -benchtime=1x -timeout 30m ./app/

# The fault suite on its own (real replicas on PostgreSQL, crashes, an
# outage, a flood), then the sustained intake of two replicas and the peak
# RSS of a replica taking big model request bodies; results are recorded in
# BENCHMARKS.md.
bench-faults: ensure-go ensure-postgres ensure-bubblewrap
	$(GO) test -count=1 -v -parallel 4 -run . ./internal/faults/
	$(GO) test -run '^$$' -bench IntakeTwoReplicas -benchtime 2000x -count 3 ./internal/faults/
	$(GO) test -run '^$$' -bench ModelProxyBodiesPeakRSS -benchtime 1x -count 4 ./internal/faults/

# The dashboard's screenshots in docs/screenshots (the README shows them),
# regenerated by its browser test in headless Chromium.
screenshots: ensure-go ensure-chromium ensure-emoji-font ensure-bubblewrap ensure-tools-image
	INSPECT_SCREENSHOTS=$(CURDIR)/docs/screenshots $(GO) test -tags inspecttest -count=1 -run 'TestDashboardSignInListCancel|TestDashboardStartsASessionThatEndsInAPR|TestDashboardShowsAFinishedSessionWithItsEvidence|TestSnapshotBuildEgressIsStoredAndOnTheSnapshotsPage|TestOutcomesPageInTheBrowser' ./app/

clean:
	rm -rf bin .demo
