#!/usr/bin/env bash
# Regenerates github-openapi.json from the pinned @octokit/openapi package:
# the operations in operations.txt and the webhooks in webhooks.txt of
# generated/api.github.com.json, with the components they reference; and
# app-permissions.json, those operations' rows of GitHub's permissions table.
# Run from anywhere; needs npm and go.
set -euo pipefail
version=23.0.2
# GitHub's "Permissions required for GitHub Apps" table, machine-readable
# (octokit/app-permissions, generated from docs.github.com).
permissions_version=2.1.0
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@octokit/openapi@$version" >/dev/null && tar xzf "octokit-openapi-$version.tgz")
mkdir "$tmp/perms"
(cd "$tmp/perms" && npm pack --silent "@octokit/app-permissions@$permissions_version" >/dev/null && tar xzf "octokit-app-permissions-$permissions_version.tgz")
cd "$root"
go run ./internal/ghconformance/gen -spec "$tmp/package/generated/api.github.com.json" -dir internal/ghconformance \
  -source "@octokit/openapi@$version generated/api.github.com.json" \
  -permissions "$tmp/perms/package/generated/api.github.com.json" \
  -permissions-source "@octokit/app-permissions@$permissions_version generated/api.github.com.json"
cp "$tmp/package/LICENSE" internal/ghconformance/LICENSE.octokit-openapi
cp "$tmp/perms/package/LICENSE" internal/ghconformance/LICENSE.octokit-app-permissions
