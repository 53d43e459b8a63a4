import type { OutboxEvent } from '../../platform/outbox/outbox.ts';
import { EVENT_CATALOGUE, SPEC_PAYLOAD_EVENTS } from '../events/catalog.ts';
import type { PayloadFormat } from './schemas.ts';

/**
 * The bytes a delivery sends (docs/webhooks.md "Body formats"), made from the event's stored body
 * (`events.payload`, the `standard` body, written once by emitEvent) and the delivery's format:
 *
 * - `standard`: the stored body itself, `{id, event, created_at, is_test, data}`.
 * - `legacy`: OnePay's older body, `{"<resource>": data, "event": {type, timestamp, environment}}`;
 *   `<resource>` is the catalogue's `resource` of the type, `timestamp` the event's creation in
 *   whole Unix seconds, `environment` `live` or `test`. The invoicing events of SPEC's "Invoice
 *   stamping payloads" (`invoice.stamped`, `invoice.stamp_rejected`, `invoice.credit_note_issued`)
 *   keep SPEC's exact payload: they are sent in the standard body in both formats.
 *
 * A pure function of the stored body: every attempt of a delivery sends the same bytes. Both are
 * `JSON.stringify` output of parsed JSON, so `JSON.stringify(JSON.parse(body)) === body` holds
 * (receivers following OnePay's guide sign the re-serialised body; see body.property.test.ts).
 */
export function deliveryBody(storedPayload: string, format: PayloadFormat): string {
  if (format === 'standard') return storedPayload;
  const event = JSON.parse(storedPayload) as OutboxEvent;
  if (SPEC_PAYLOAD_EVENTS.has(event.event)) return storedPayload;
  return JSON.stringify(legacyBody(event));
}

/** The legacy body of an event (not for SPEC's invoicing payloads, see deliveryBody). */
export function legacyBody(event: OutboxEvent): Record<string, unknown> {
  return {
    // A computed key defines an own property (never the __proto__ setter).
    [resourceOf(event.event)]: event.data,
    event: {
      type: event.event,
      timestamp: Math.floor(Date.parse(event.created_at) / 1000),
      environment: event.is_test ? 'test' : 'live',
    },
  };
}

/** The object's key in the legacy body: the catalogue's, or the type's first segment. */
export function resourceOf(type: string): string {
  const known = (EVENT_CATALOGUE as Record<string, { resource: string } | undefined>)[type];
  return known ? known.resource : type.split('.')[0];
}
