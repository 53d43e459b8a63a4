import type { AppDeps } from '../platform/context.ts';
import type { Database } from '../platform/db/database.ts';
import type { ModuleRegistrar } from '../platform/http/app.ts';
import { customerRoutes } from './customers/routes.ts';

/** Every domain module's routes, in one list the app factory registers under /v1. */
export const modules: ModuleRegistrar[] = [customerRoutes];

/** Catalogues every install needs (banks...), upserted at start. */
export async function seedCatalogues(_database: Database): Promise<void> {}

/** Background job handlers of every module. */
export function registerJobHandlers(_deps: AppDeps): void {}
