#!/usr/bin/env bash
# Runs a command with Node 24 or newer first on PATH (see node-env.sh): `bash scripts/with-node.sh node x.ts`.
set -euo pipefail
source "$(dirname "$0")/node-env.sh"
exec "$@"
