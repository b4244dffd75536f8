#!/usr/bin/env bash
# CI's smoke run of the packed library: the consumer test of `npm test`
# (scripts/consumer-test.js), with each consumer app installed by a real
# `npm install` of the tarball and of the peers at the versions this repository
# tests with, as a user installs them — instead of `npm test`'s links to the
# repository's own node_modules. An app with only the required peers and one with
# every optional peer type-check against the packed .d.ts (strict, skipLibCheck
# false; commonjs and nodenext), with every TypeScript block of README.md and
# docs/; the first boots and serializes requests, and stops at start-up for each
# missing optional peer; the second runs docs/testing.md's recipes under ts-jest
# and @swc/jest. Exits non-zero on any failure; removes its folders.
set -euo pipefail
cd "$(dirname "$0")/.."
exec node scripts/consumer-test.js --mode npm
