// Generates src/modules/invoices/dian/departments.json (DIVIPOLA department code → name) from DIAN's
// genericode list in ../shared/data (run by hand when it changes; the service never reads ../shared).
// Municipality names are already shipped in src/data/municipalities.json (scripts/generate-codelists.mjs).
import fs from 'node:fs';
import path from 'node:path';

const src = path.resolve(process.argv[2] ?? '../shared/data/dian-codelists');
const out = path.resolve('src/modules/invoices/dian/departments.json');
const xml = fs.readFileSync(path.join(src, 'Departamentos-2.1.gc'), 'utf8');
const rows = [...xml.matchAll(/<Row>([\s\S]*?)<\/Row>/g)].map((m) => {
  const row = {};
  for (const v of m[1].matchAll(/<Value ColumnRef="([^"]+)">\s*<SimpleValue>([\s\S]*?)<\/SimpleValue>/g)) row[v[1]] = v[2].trim();
  return row;
});
const map = Object.fromEntries(rows.map((r) => [r.code, r.name ?? '']).sort((a, b) => a[0].localeCompare(b[0])));
fs.writeFileSync(out, JSON.stringify(map, null, 0) + '\n');
console.log(`departments.json: ${Object.keys(map).length} codes`);
