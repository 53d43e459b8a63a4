import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { CompiledQuery, type Kysely } from 'kysely';

/** One statement as the driver sent it to the engine. */
export interface SentStatement {
  sql: string;
  params: unknown[];
}

/**
 * Records every statement sent through node-postgres or PGlite while it is on (both engines'
 * query methods are wrapped at their prototype; test-only). `stop()` puts them back.
 */
export function captureStatements(): { sent: SentStatement[]; stop(): void } {
  const sent: SentStatement[] = [];
  let owner: any = PGlite.prototype;
  while (owner && !Object.prototype.hasOwnProperty.call(owner, 'query')) owner = Object.getPrototypeOf(owner);
  const targets: any[] = [pg.Client.prototype, owner];
  const originals = targets.map((t) => t.query);
  targets.forEach((target, i) => {
    target.query = function (this: unknown, text: unknown, params: unknown, ...rest: unknown[]) {
      if (typeof text === 'string') sent.push({ sql: text, params: Array.isArray(params) ? [...params] : [] });
      return originals[i].call(this, text, params, ...rest);
    };
  });
  return {
    sent,
    stop() {
      targets.forEach((target, i) => (target.query = originals[i]));
    },
  };
}

/** A plan node of EXPLAIN (FORMAT JSON), with its children flattened by `planNodes`. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Filter?: string;
  Plans?: PlanNode[];
  [key: string]: unknown;
}

export function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}

/** EXPLAIN (FORMAT JSON) of a statement with its parameters, on the engine under test. */
export async function explain(db: Kysely<any>, statement: SentStatement): Promise<PlanNode> {
  const result = await db.executeQuery<{ 'QUERY PLAN': unknown }>(CompiledQuery.raw(`EXPLAIN (FORMAT JSON) ${statement.sql}`, statement.params));
  const raw = result.rows[0]['QUERY PLAN'];
  const doc = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { Plan: PlanNode }[];
  return doc[0].Plan;
}
