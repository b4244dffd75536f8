#!/usr/bin/env bash
# `npm run test:node -- <major>`: the whole suite (`npm test`) on another Node.js major
# (22, 24, 26, …), installed from the npm registry's `node` package by
# scripts/node-runtime.js. The machine's Node is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
major=${1:?usage: npm run test:node -- <major>   (e.g. 22, 24 or 26)}
bin=$(node scripts/node-runtime.js "$major")
export PATH="$bin:$PATH"
echo "== npm test on $(node --version)"
npm test
