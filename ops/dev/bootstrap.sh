#!/usr/bin/env bash
# Dev-stack bootstrap shared by `npm start` and `npm test`; idempotent and safe to run often.
# This shim only takes the lock and installs the Node dependencies; the rest is TypeScript
# (ops/dev/bootstrap.ts), which needs them.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .data/logs .tools
exec 9>.data/bootstrap.lock
flock 9
if [ -L node_modules ]; then
  # A shared install (a git worktree pointing at another checkout's node_modules): npm ci here
  # would empty the shared directory under everyone using it. Install where it points instead.
  [ -f node_modules/.package-lock.json ] || { echo "[bootstrap] node_modules -> $(readlink node_modules) has no install: run npm ci there" >&2; exit 1; }
elif [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "[bootstrap] installing Node dependencies (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi
exec node_modules/.bin/tsx ops/dev/bootstrap.ts "$@"
