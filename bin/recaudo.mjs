#!/usr/bin/env node
// The operator CLI: dist/cli/main.js, or the sources when they changed since the build (bin/entry.mjs).
import { runEntry } from './entry.mjs';

await runEntry('cli/main');
