// tsc does not copy non-TypeScript files; the Redis provider and the BullMQ order
// read their Lua scripts at run time. `npm run build:lib` runs this file (it also
// copies the package's package.json, README, LICENSE and CHANGELOG); the benchmark
// build (bench/start.js) calls copyLuaFiles for its own output folder.
const fs = require('fs');
const path = require('path');

const SRC = path.join(__dirname, '..', 'libs', 'serialized', 'src');

/** Copies every `.lua` file below `from` to the same relative place below `to`. */
function copyLuaFiles(from, to) {
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    if (entry.isDirectory()) copyLuaFiles(source, path.join(to, entry.name));
    else if (entry.name.endsWith('.lua')) {
      fs.mkdirSync(to, { recursive: true });
      fs.copyFileSync(source, path.join(to, entry.name));
    }
  }
}

module.exports = { copyLuaFiles, LIB_SOURCES: SRC };

if (require.main === module) {
  const root = path.join(__dirname, '..');
  // `node copy-lib-assets.js [outDir]`: scripts/pack-lib.js --out builds elsewhere.
  const out = process.argv[2] ? path.resolve(process.argv[2]) : path.join(root, 'dist', 'libs', 'serialized');
  copyLuaFiles(SRC, out);
  // What the published package carries besides the compiled code (its `files` list):
  // the library's own package.json and README, and the repository's LICENSE and CHANGELOG.
  const assets = {
    'package.json': path.join(root, 'libs', 'serialized', 'package.json'),
    'README.md': path.join(root, 'libs', 'serialized', 'README.md'),
    LICENSE: path.join(root, 'LICENSE'),
    'CHANGELOG.md': path.join(root, 'CHANGELOG.md'),
  };
  for (const [name, from] of Object.entries(assets)) {
    if (!fs.existsSync(from)) throw new Error(`copy-lib-assets: ${path.relative(root, from)} is missing`);
    fs.copyFileSync(from, path.join(out, name));
  }
}
