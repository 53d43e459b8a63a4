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
  children: ['webhook_attempts'],
  order: 'id',
  setting: 'RETENTION_WEBHOOK_DELIVERIES_DAYS',
  age: (config) => days(config.retention.webhookDeliveriesDays),
  select: (batch) => sql`
    SELECT ctid, id, id AS cursor FROM webhook_deliveries
    WHERE id < ${idsBefore('whd', batch.cutoff)} ${afterCursor(batch, 'id')}
      AND created_at < ${batch.cutoff} AND status <> 'pending' ${onlyCompanies(batch)}
    ORDER BY id LIMIT ${batch.limit} FOR UPDATE SKIP LOCKED`,
  // The attempts go with their delivery, in the same statement, found by the delivery's id alone
  // (webhook_attempts_delivery; an id names one delivery). The delivery by its ctid (locked).
  statement: (batch) => sql<SweepRow>`
      WITH doomed AS (${webhookDeliveries.select(batch)}),
      attempts AS (DELETE FROM webhook_attempts a USING doomed d WHERE a.delivery_id = d.id),
      swept AS (DELETE FROM webhook_deliveries t USING doomed d WHERE t.ctid = d.ctid RETURNING d.cursor)
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
  age: eventsAge,
  select: (batch) => sql`
    SELECT e.ctid, e.id AS cursor FROM events e
    WHERE e.id < ${idsBefore('evt', batch.cutoff)} ${afterCursor(batch, 'e.id')}
      AND e.created_at < ${batch.cutoff} ${onlyCompanies(batch, 'e.company_id')}
      AND NOT EXISTS (
        SELECT 1 FROM webhook_deliveries d WHERE d.company_id = e.company_id AND d.environment = e.environment AND d.event_id = e.id
      )
    ORDER BY e.id LIMIT ${batch.limit} FOR UPDATE OF e SKIP LOCKED`,
};

/** In order: the deliveries first, so their events can go in the same run. */
export const webhookRetention: RetentionRule[] = [webhookDeliveries, events];
