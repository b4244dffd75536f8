// tsc does not copy non-TypeScript files; the Redis provider reads its Lua scripts at run time.
const fs = require('fs');
const path = require('path');

const src = path.join(__dirname, '..', 'libs', 'serialized', 'src');
const out = path.join(__dirname, '..', 'dist', 'libs', 'serialized');

function copy(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const from = path.join(dir, entry.name);
    if (entry.isDirectory()) copy(from);
    else if (entry.name.endsWith('.lua')) {
      const to = path.join(out, path.relative(src, from));
      fs.mkdirSync(path.dirname(to), { recursive: true });
      fs.copyFileSync(from, to);
    }
  }
}
copy(src);
for (const file of ['package.json', 'README.md']) {
  const from = path.join(__dirname, '..', 'libs', 'serialized', file);
  if (fs.existsSync(from)) fs.copyFileSync(from, path.join(out, file));
}
