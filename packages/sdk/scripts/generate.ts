// npm run generate -w @recaudo/node: regenerates src/schema.d.ts from the service's current OpenAPI
// document (built in-process from the repository's routes; no server needed). Commit the result.
import fs from 'node:fs';
import { describeService } from './document.ts';
import { renderSchema, SCHEMA_FILE } from './schema.ts';

const started = Date.now();
const { document } = await describeService();
const text = await renderSchema(document);
const before = fs.existsSync(SCHEMA_FILE) ? fs.readFileSync(SCHEMA_FILE, 'utf8') : '';
fs.writeFileSync(SCHEMA_FILE, text);
const operations = Object.values(document.paths as Record<string, object>).reduce(
  (n, item) => n + Object.keys(item).filter((k) => k !== 'parameters').length,
  0,
);
console.log(
  `${before === text ? 'unchanged' : 'updated'}: ${SCHEMA_FILE} (${operations} operations, ${Math.round(text.length / 1024)} KiB) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
);
