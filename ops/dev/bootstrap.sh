#!/usr/bin/env bash
# Dev-stack bootstrap shared by `npm start` and `npm test`; idempotent and safe to run often.
# This shim only takes the lock and installs the Node dependencies; the rest is TypeScript
# (ops/dev/bootstrap.ts), which needs them.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .data/logs .tools
exec 9>.data/bootstrap.lock
flock 9
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "[bootstrap] installing Node dependencies (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi
exec node_modules/.bin/tsx ops/dev/bootstrap.ts "$@"
