// tsc does not copy non-TypeScript files; the Redis provider and the BullMQ order
// read their Lua scripts at run time. `npm run build:lib` runs this file; the
// benchmark build (bench/start.js) calls copyLuaFiles for its own output folder.
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
  const out = path.join(__dirname, '..', 'dist', 'libs', 'serialized');
  copyLuaFiles(SRC, out);
  for (const file of ['package.json', 'README.md']) {
    const from = path.join(__dirname, '..', 'libs', 'serialized', file);
    if (fs.existsSync(from)) fs.copyFileSync(from, path.join(out, file));
  }
}
