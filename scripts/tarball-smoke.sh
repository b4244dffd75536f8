#!/usr/bin/env bash
# The packed library, installed as a user installs it: `npm run pack:lib`, then a fresh
# NestJS 11 app in a temporary folder that installs the tarball (packages from the local
# npm cache when it has them), type-checks against its .d.ts with Nest 11's default
# `nodenext` resolution, boots, and sends serialized requests (scripts/tarball-smoke/main.ts
# asserts the answers). Exits non-zero on any failure; removes the folder.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

tarball=$(node scripts/pack-lib.js --quiet)
app=$(mktemp -d "${TMPDIR:-/tmp}/serialized-smoke.XXXXXX")
trap 'rm -rf "$app"' EXIT

# The versions this repository tests with, so the cache has them.
version() { node -p "require('$ROOT/node_modules/$1/package.json').version"; }
cat > "$app/package.json" <<JSON
{ "name": "serialized-smoke-app", "private": true, "version": "0.0.0" }
JSON
cp scripts/tarball-smoke/main.ts scripts/tarball-smoke/tsconfig.json "$app/"

echo "== installing $(basename "$tarball") into a fresh NestJS 11 app ($app)"
(cd "$app" && npm install --prefer-offline --no-audit --no-fund --loglevel=error \
  "$tarball" \
  "@nestjs/common@$(version @nestjs/common)" "@nestjs/core@$(version @nestjs/core)" \
  "@nestjs/platform-express@$(version @nestjs/platform-express)" \
  "reflect-metadata@$(version reflect-metadata)" "rxjs@$(version rxjs)" \
  "class-validator@$(version class-validator)" "@types/node@$(version @types/node)")

echo "== type-checking and compiling the app against the package's .d.ts"
(cd "$app" && "$ROOT/node_modules/.bin/tsc" -p tsconfig.json)

echo "== booting it"
(cd "$app" && SERIALIZED_DRIVER=memory node dist/main.js)
