# syntax=docker/dockerfile:1
#
# Inspect's container image: docs/deploy.md has the recipes.
#
#   docker build -t inspect .                  # executor.kind buildkite (or none): a static
#                                              # inspect on scratch, as user 65532
#   docker build --target local -t inspect:local .
#                                              # executor.kind local: adds bubblewrap and git,
#                                              # as user 10001; see "Run flags" below
#
# Base images are pinned by the digest of their multi-platform image index,
# as docker-library/repo-info publishes it for the official images:
#   golang:1.26.8-bookworm         repos/golang/remote/1.26.8-bookworm.md
#                                  (commit e243c7edb883107b26904e1bfd094b120b43b9a8)
#   debian:bookworm-20260824-slim  repos/debian/remote/bookworm-20260824-slim.md
#                                  (commit cae117d8c88cf4f36d2e284cb10fc1a8851f18bc)
# FROM scratch and the stages' own names need none. internal/dockerfile's
# test checks every FROM, the final stages' USER and the build flags, and
# that internal/dockerfile/testdata/Containerfile keeps these stages: the
# test builds that file with podman on a Debian root built on the test
# machine (no registry is reachable there) and runs both targets
# (decision 0070). Change a stage here, change it there.
#
# Run flags for the local target: bubblewrap makes user, mount, PID and
# network namespaces for every session, which Docker's default seccomp
# profile and AppArmor profile forbid, and mounts a fresh /proc, which the
# kernel refuses while the runtime's masked /proc paths are mounted over the
# container's ("bwrap: Can't mount proc on /newroot/proc: Operation not
# permitted"). Run it with
#   --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined
# (podman takes the same flags; internal/dockerfile's TestImageServes runs
# the image with them) on a host that allows unprivileged user namespaces
# (sysctl kernel.unprivileged_userns_clone=1 on Debian and Ubuntu; on
# Ubuntu 24.04 and later also kernel.apparmor_restrict_unprivileged_userns=0).
# No --privileged and no added capabilities are needed.

FROM golang:1.26.8-bookworm@sha256:9fdc884aacc3bec89b20ffc69f4bb369c78210e3e4f600387b5128b12c199f81 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The flags README.md gives ("Building the binary"): static, reproducible paths.
RUN CGO_ENABLED=0 go build -trimpath -o /out/inspect ./cmd/inspect
RUN mkdir -p /out/state

# executor.kind local: sessions run in bubblewrap on this container.
FROM debian:bookworm-20260824-slim@sha256:88200866dfff7ea7f5cbcb6ec7c8a701889efe6fe859fe64d6990e4b07ea4171 AS local
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --user-group --create-home --home-dir /var/lib/inspect inspect
COPY --from=build /out/inspect /usr/local/bin/inspect
USER 10001:10001
ENV INSPECT_STATE_DIR=/var/lib/inspect/state
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/inspect"]
CMD ["serve", "--config", "/etc/inspect/inspect.yaml"]

# The default: executor.kind buildkite (sessions run on Buildkite's agents)
# or none. Nothing but the binary and the CA roots.
FROM scratch AS server
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build --chown=65532:65532 /out/state /var/lib/inspect
COPY --from=build /out/inspect /inspect
USER 65532:65532
ENV HOME=/var/lib/inspect INSPECT_STATE_DIR=/var/lib/inspect
EXPOSE 8080
ENTRYPOINT ["/inspect"]
CMD ["serve", "--config", "/etc/inspect/inspect.yaml"]
