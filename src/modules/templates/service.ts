import type { Selectable } from 'kysely';
import type { RequestContext } from '../../platform/context.ts';
import type { Executor } from '../../platform/db/database.ts';
import { validationError } from '../../platform/errors/api-error.ts';
import { paginate, parseListQuery } from '../../platform/lists/lists.ts';
import { iso } from '../../platform/scope.ts';
import { TEMPLATE_CATALOGUE } from './catalogue.ts';
import { templateList, type TemplateResponse } from './schemas.ts';
import type { MessageTemplatesTable } from './tables.ts';
import './tables.ts';

export type TemplateRow = Selectable<MessageTemplatesTable>;

/** Upserts the catalogue (every start, and the test template). Rows are never deleted: payments point at them. */
export async function seedTemplates(db: Executor): Promise<void> {
  await db
    .insertInto('message_templates')
    .values(TEMPLATE_CATALOGUE.map((t) => ({ ...t })))
    .onConflict((oc) =>
      oc.column('id').doUpdateSet((eb) => ({
        name: eb.ref('excluded.name'),
        status: eb.ref('excluded.status'),
        stage: eb.ref('excluded.stage'),
        provider: eb.ref('excluded.provider'),
        predefined: eb.ref('excluded.predefined'),
        selectable: eb.ref('excluded.selectable'),
        body: eb.ref('excluded.body'),
        created_at: eb.ref('excluded.created_at'),
        updated_at: eb.ref('excluded.updated_at'),
      })),
    )
    .execute();
}

export function toTemplateResponse(row: TemplateRow): TemplateResponse {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    stage: row.stage,
    provider: row.provider,
    predefined: row.predefined,
    selectable: row.selectable,
    body: row.body,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

function booleanFilter(name: string, value: string): boolean {
  if (value !== 'true' && value !== 'false') throw validationError({ [`filter[${name}]`]: ['must be true or false'] });
  return value === 'true';
}

/** GET /templates: filters status, stage, provider (exact), predefined and selectable (true/false, else 422). */
export async function listTemplates(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(templateList, query);
  const f = list.filters;
  let q = ctx.db.selectFrom('message_templates').selectAll();
  if (f.predefined !== undefined) q = q.where('predefined', '=', booleanFilter('predefined', f.predefined));
  if (f.selectable !== undefined) q = q.where('selectable', '=', booleanFilter('selectable', f.selectable));
  if (f.status !== undefined) q = q.where('status', '=', f.status as TemplateRow['status']);
  if (f.stage !== undefined) q = q.where('stage', '=', f.stage as TemplateRow['stage']);
  if (f.provider !== undefined) q = q.where('provider', '=', f.provider as TemplateRow['provider']);
  return paginate(q, list, { path, query, table: 'message_templates', defaultSort: { field: 'name', direction: 'asc' }, map: toTemplateResponse });
}

export async function findTemplate(db: Executor, id: string): Promise<TemplateRow | undefined> {
  if (id.length > 100) return undefined;
  return db.selectFrom('message_templates').selectAll().where('id', '=', id).executeTakeFirst();
}

/** A template a payment or a campaign may use (`selectable`), by its id or its name; else undefined. */
export async function findSelectableTemplate(db: Executor, idOrName: string): Promise<TemplateRow | undefined> {
  if (idOrName.length > 100) return undefined;
  return db
    .selectFrom('message_templates')
    .selectAll()
    .where('selectable', '=', true)
    .where((eb) => eb.or([eb('id', '=', idOrName), eb('name', '=', idOrName)]))
    .orderBy('id')
    .executeTakeFirst();
}
