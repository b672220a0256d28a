#!/usr/bin/env bash
# Installs the npm dependencies when they are missing or older than the lockfile.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node-env.sh
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  # `npm install` and not `npm ci`: npm 11 writes only this platform's entries of optional native
  # packages (Biome's CLI) into the lockfile and then `npm ci` refuses it as out of sync. With an
  # unchanged package.json, `npm install` installs exactly the locked versions.
  npm install --no-audit --no-fund
fi
# kustomize renders the Kubernetes overlays for the tests (test/infra/k8s.unit.test.ts); like MinIO
# it is a Go module, built once when missing.
if ! command -v kustomize >/dev/null && [ ! -x "$(go env GOPATH 2>/dev/null)/bin/kustomize" ]; then
  command -v go >/dev/null || { echo "install: kustomize is missing and Go is not installed to build it" >&2; exit 1; }
  echo "install: building kustomize from its Go module (first run only)" >&2
  go install sigs.k8s.io/kustomize/kustomize/v5@v5.7.1
fi
