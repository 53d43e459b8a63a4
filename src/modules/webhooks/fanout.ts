import { sql } from 'kysely';
import type { EventSink } from '../../platform/outbox/outbox.ts';
import { DELIVERY_MACHINE } from './lifecycle.ts';
import { newDeliveryId } from './service.ts';
import './tables.ts';
import { inTenant } from '../../platform/scope.ts';

/**
 * Creates one delivery per subscribed webhook of the event's company and environment, inside the
 * emitting transaction: an event committed is an event whose deliveries exist.
 */
export const webhookFanOut: EventSink = async (trx, scope, event, at) => {
  const subscribed = await trx
    .selectFrom('webhooks')
    .select(['id', 'payload_format'])
    .$call(inTenant(scope))
    .where('deleted_at', 'is', null)
    .where(sql<boolean>`events @> ${JSON.stringify([event.event])}::jsonb`)
    .execute();
  if (subscribed.length === 0) return;
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
};
