import { sql } from 'kysely';
import { afterCursor, idsBefore, onlyCompanies, type RetentionRule } from '../../platform/retention/retention.ts';

/**
 * Events providers posted to /v1/rails/{name}/events, older than RETENTION_CONNECTOR_EVENTS_DAYS:
 * refused ones and events for references Recaudo does not know (anyone can post them), and
 * verified ones except the newest of each company's connector, which the connector's health shows
 * (`last_event_at`). Event ids carry their arrival time (the primary key's index).
 */
export const connectorEvents: RetentionRule = {
  name: 'connectors.events',
  table: 'connector_events',
  order: 'id',
  setting: 'RETENTION_CONNECTOR_EVENTS_DAYS',
  age: (config) => (config.retention.connectorEventsDays > 0 ? config.retention.connectorEventsDays * 86_400_000 : null),
  select: (batch) => sql`
    SELECT e.ctid, e.id AS cursor FROM connector_events e
    WHERE e.id < ${idsBefore('cev', batch.cutoff)} ${afterCursor(batch, 'e.id')}
      AND e.received_at < ${batch.cutoff} ${onlyCompanies(batch, 'e.company_id')}
      AND (
        NOT e.verified OR e.company_id IS NULL OR EXISTS (
          SELECT 1 FROM connector_events newer
          WHERE newer.company_id = e.company_id AND newer.environment = e.environment AND newer.connector = e.connector
            AND newer.verified AND newer.received_at > e.received_at
        )
      )
    ORDER BY e.id LIMIT ${batch.limit} FOR UPDATE OF e SKIP LOCKED`,
};
