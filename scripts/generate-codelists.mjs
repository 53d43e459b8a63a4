// Generates src/data/*.json from DIAN genericode lists in ../shared/data (run by hand when they change;
// the service itself never reads ../shared).
import fs from 'node:fs';
import path from 'node:path';

const src = path.resolve(process.argv[2] ?? '../shared/data/dian-codelists');
const out = path.resolve('src/data');

function rows(file) {
  const xml = fs.readFileSync(path.join(src, file), 'utf8');
  return [...xml.matchAll(/<Row>([\s\S]*?)<\/Row>/g)].map((m) => {
    const row = {};
    for (const v of m[1].matchAll(/<Value ColumnRef="([^"]+)">\s*<SimpleValue>([\s\S]*?)<\/SimpleValue>/g)) row[v[1]] = v[2].trim();
    return row;
  });
}

const lists = {
  'municipalities.json': 'Municipio-2.1.gc',
  'fiscal-responsibilities.json': 'TipoResponsabilidad-2.1.custom.gc',
  'tax-regimes.json': 'RegimenFiscal-2.1.custom.gc',
};
for (const [name, file] of Object.entries(lists)) {
  const map = Object.fromEntries(rows(file).map((r) => [r.code, r.name ?? '']));
  fs.writeFileSync(path.join(out, name), JSON.stringify(map, null, 0) + '\n');
  console.log(`${name}: ${Object.keys(map).length} codes`);
}

// Tax rates DIAN allows per tax (percent with 2 decimals → basis points), for invoice lines and prices.
const rates = {};
for (const [tax, file] of [
  ['iva', 'TarifaImpuestoIVA-2.1.gc'],
  ['inc', 'TarifaImpuestoINC-2.1.gc'],
]) {
  rates[tax] = rows(file)
    .map((r) => Math.round(Number(r.code) * 100))
    .sort((a, b) => a - b);
}
fs.writeFileSync(path.join(out, 'tax-rates.json'), JSON.stringify(rates) + '\n');
console.log(`tax-rates.json: ${JSON.stringify(rates)}`);
