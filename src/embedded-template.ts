// Builds the embedded engine's template (src/platform/db/embedded.ts): a migrated, seeded PGlite
// data directory that a new DATA_DIR starts as a copy of. Run by `npm run build` from the build
// (node dist/embedded-template.js [dir], default dist/embedded-template).
import path from 'node:path';
import { buildTemplate, defaultTemplateDir } from './platform/db/embedded.ts';
import { wrapPglite } from './platform/db/database.ts';
import { migrate } from './platform/db/migrate.ts';
import { seedCatalogues } from './modules/index.ts';

const dir = path.resolve(process.argv[2] ?? defaultTemplateDir());
const started = performance.now();
await buildTemplate(dir, async (pglite) => {
  const database = wrapPglite(pglite);
  const applied = await migrate(database);
  await seedCatalogues(database);
  return applied;
});
process.stderr.write(`embedded template written to ${dir} in ${Math.round(performance.now() - started)} ms\n`);
