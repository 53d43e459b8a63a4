import { sql } from 'kysely';
import type { Config } from '../../config.ts';
import { afterCursor, idsBefore, onlyCompanies, type RetentionRule, type SweepRow } from '../../platform/retention/retention.ts';

const DAY_MS = 86_400_000;
const days = (n: number) => (n > 0 ? n * DAY_MS : null);

/**
 * Finished deliveries (succeeded, failed, cancelled) of events older than
 * RETENTION_WEBHOOK_DELIVERIES_DAYS, with their attempts. A pending delivery is never swept: it is
 * still being tried, or was re-sent by hand. A delivery's id carries its event's time (fan-out),
 * so the sweep walks the webhook_deliveries_id index up to the cutoff.
 */
export const webhookDeliveries: RetentionRule = {
  name: 'webhooks.deliveries',
  table: 'webhook_deliveries',
  order: 'id',
  setting: 'RETENTION_WEBHOOK_DELIVERIES_DAYS',
  key: ['company_id', 'environment', 'id'],
  age: (config) => days(config.retention.webhookDeliveriesDays),
  select: (batch) => sql`
    SELECT company_id, environment, id, id AS cursor FROM webhook_deliveries
    WHERE id < ${idsBefore('whd', batch.cutoff)} ${afterCursor(batch, 'id')}
      AND created_at < ${batch.cutoff} AND status <> 'pending' ${onlyCompanies(batch)}
    ORDER BY id LIMIT ${batch.limit} FOR UPDATE SKIP LOCKED`,
  // The attempts go with their delivery, in the same statement (webhook_attempts_delivery).
  statement: (batch) => sql<SweepRow>`
      WITH doomed AS (${webhookDeliveries.select(batch)}),
      attempts AS (
        DELETE FROM webhook_attempts a USING doomed d
        WHERE a.delivery_id = d.id AND a.company_id = d.company_id AND a.environment = d.environment
      ),
      swept AS (
        DELETE FROM webhook_deliveries t USING doomed d
        WHERE t.company_id = d.company_id AND t.environment = d.environment AND t.id = d.id RETURNING d.cursor
      )
      SELECT count(*) AS n, max(cursor) AS cursor FROM swept`,
};

/** Events are kept at least as long as deliveries: an event goes only once none of its deliveries is left. */
function eventsAge(config: Config): number | null {
  const { eventsDays, webhookDeliveriesDays } = config.retention;
  if (eventsDays === 0) return null;
  return days(Math.max(eventsDays, webhookDeliveriesDays));
}

/**
 * Events older than RETENTION_EVENTS_DAYS (PRODUCT.md keeps them at least 30 days) that no delivery
 * refers to any more: the dispatcher reads an event's body at every attempt, and a delivery can be
 * re-sent by hand while it exists. Runs after webhooks.deliveries, which frees most of them. Flow
 * runs keep their own copy of the event's body. Event ids carry their time (events_id index).
 */
export const events: RetentionRule = {
  name: 'events',
  table: 'events',
  order: 'id',
  setting: 'RETENTION_EVENTS_DAYS',
  key: ['company_id', 'environment', 'id'],
  age: eventsAge,
  select: (batch) => sql`
    SELECT e.company_id, e.environment, e.id, e.id AS cursor FROM events e
    WHERE e.id < ${idsBefore('evt', batch.cutoff)} ${afterCursor(batch, 'e.id')}
      AND e.created_at < ${batch.cutoff} ${onlyCompanies(batch, 'e.company_id')}
      AND NOT EXISTS (
        SELECT 1 FROM webhook_deliveries d WHERE d.company_id = e.company_id AND d.environment = e.environment AND d.event_id = e.id
      )
    ORDER BY e.id LIMIT ${batch.limit} FOR UPDATE OF e SKIP LOCKED`,
};

/** In order: the deliveries first, so their events can go in the same run. */
export const webhookRetention: RetentionRule[] = [webhookDeliveries, events];
