/** Whether dist/ (under `dir`, the project by default) was built after the last change in src/. */
export function buildIsCurrent(dir?: string): boolean;
/** Imports `name` (e.g. 'main', 'cli/main') from dist/ or src/ (bin/entry.mjs). */
export function runEntry(name: string, opts?: { announce?: boolean }): Promise<unknown>;
