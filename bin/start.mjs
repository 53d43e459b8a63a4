#!/usr/bin/env node
// `npm start` / `npm run worker`: dist/main.js, or the sources (said on stderr) when they changed
// since the build (bin/entry.mjs). Production images run `node dist/main.js` directly.
import { runEntry } from './entry.mjs';

await runEntry('main', { announce: true });
