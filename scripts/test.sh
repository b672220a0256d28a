#!/usr/bin/env bash
# Every test: unit, integration against the real backing parts, and end-to-end through the gateway.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node-env.sh
bash scripts/install.sh
# Without URLs from the environment and without Docker, the tests use this machine's services.
if [ -z "${TEST_POSTGRES_URL:-}" ] && [ -z "${DOCKER_HOST:-}" ] && [ ! -S /var/run/docker.sock ]; then
  bash scripts/backing.sh
fi
exec npx vitest run "$@"
