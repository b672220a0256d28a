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
