import { sql, type Transaction } from 'kysely';
import type { DB } from '../../platform/db/schema.ts';
import type { EventSink, OutboxEvent } from '../../platform/outbox/outbox.ts';
import { DELIVERY_MACHINE } from './lifecycle.ts';
import { newDeliveryId } from './service.ts';
import './tables.ts';
import { inTenant, type Tenant } from '../../platform/scope.ts';

/**
 * Creates one delivery per subscribed webhook of the event's company and environment, inside the
 * emitting transaction: an event committed is an event whose deliveries exist.
 */
export const webhookFanOut: EventSink = {
  subscribers: (trx, scope, eventType) =>
    trx
      .selectFrom('webhooks')
      .select(['id', 'payload_format'])
      .$call(inTenant(scope))
      .where('deleted_at', 'is', null)
      .where(sql<boolean>`events @> ${JSON.stringify([eventType])}::jsonb`),
  deliver: (trx, scope, event, at, rows) => deliverTo(trx, scope, event, at, rows as unknown as Subscribed[]),
};

type Subscribed = { id: string; payload_format: 'standard' | 'legacy' };

async function deliverTo(trx: Transaction<DB>, scope: Tenant, event: OutboxEvent, at: Date, subscribed: Subscribed[]): Promise<void> {
  await trx
    .insertInto('webhook_deliveries')
    .values(
      subscribed.map((w) => ({
        company_id: scope.companyId,
        environment: scope.environment,
        id: newDeliveryId(at),
        webhook_id: w.id,
        event_id: event.id,
        event_type: event.event,
        payload_format: w.payload_format,
        status: DELIVERY_MACHINE.initial('create'),
        attempts: 0,
        max_attempts: null,
        next_attempt_at: at,
        locked_until: null,
        last_status_code: null,
        last_error: null,
        created_at: at,
        completed_at: null,
      })),
    )
    .execute();
}
