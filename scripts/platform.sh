#!/usr/bin/env bash
# The whole platform on this machine: dependencies, backing parts, databases, then all six processes.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node-env.sh
bash scripts/install.sh
bash scripts/backing.sh
exec node --import tsx scripts/platform.ts
