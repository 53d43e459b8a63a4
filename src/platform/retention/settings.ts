/**
 * RETENTION_* (docs/operations.md "Retention"): how long swept data is kept, and how the sweeps
 * run. An age of 0 keeps that data forever (its sweep is off). Parsed here so src/config.ts only
 * carries the result.
 */
export interface RetentionSettings {
  /** RETENTION_ENABLED: worker processes sweep periodically (`recaudo retention run` works either way). */
  enabled: boolean;
  /** RETENTION_INTERVAL_SECONDS: from the end of one complete run to the start of the next (the first one waits this long after start). */
  intervalMs: number;
  /** RETENTION_RUN_SECONDS: the time budget of one run; a run cut short by it goes on after a short pause. */
  runBudgetMs: number;
  /** RETENTION_BATCH_SIZE: rows per batch; each batch is one short transaction. */
  batchSize: number;
  /** RETENTION_IDEMPOTENCY_BODY_HOURS: a completed key's stored response is dropped this long after it completed (the key stays). */
  idempotencyBodyHours: number;
  /** RETENTION_EVENTS_DAYS: events older than this (and without deliveries left) are deleted. PRODUCT.md: at least 30. */
  eventsDays: number;
  /** RETENTION_WEBHOOK_DELIVERIES_DAYS: finished deliveries (and their attempts) of events older than this. At least 30. */
  webhookDeliveriesDays: number;
  /** RETENTION_FLOW_RUNS_DAYS: finished flow runs older than this. */
  flowRunsDays: number;
  /** RETENTION_EXPIRED_DAYS: payer sessions, login codes and attempts, card tokens and approval requests, this long after they stopped counting. */
  expiredDays: number;
  /** RETENTION_CONNECTOR_EVENTS_DAYS: provider events older than this (the newest verified one of each connector stays). */
  connectorEventsDays: number;
}

/** PRODUCT.md: GET /v1/events lists what happened for at least 30 days, and any event can be re-sent meanwhile. */
export const EVENTS_FLOOR_DAYS = 30;

function whole(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  return value;
}

/** An age: 0 (keep forever) or at least `floor`. */
function age(env: NodeJS.ProcessEnv, name: string, fallback: number, floor: number): number {
  const value = whole(env, name, fallback, 0);
  if (value !== 0 && value < floor) throw new Error(`${name} must be 0 (keep forever) or at least ${floor}, got "${env[name]}"`);
  return value;
}

export function retentionSettings(env: NodeJS.ProcessEnv): RetentionSettings {
  const enabled = env.RETENTION_ENABLED ?? '';
  if (enabled !== '' && !/^(1|true|yes|on|0|false|no|off)$/i.test(enabled))
    throw new Error(`RETENTION_ENABLED must be true or false, got "${enabled}"`);
  return {
    enabled: enabled === '' || /^(1|true|yes|on)$/i.test(enabled),
    intervalMs: whole(env, 'RETENTION_INTERVAL_SECONDS', 600, 1) * 1000,
    runBudgetMs: whole(env, 'RETENTION_RUN_SECONDS', 20, 1) * 1000,
    batchSize: whole(env, 'RETENTION_BATCH_SIZE', 500, 1),
    // Hours, never less than one: far past the 60 s replay window and any claim's hold.
    idempotencyBodyHours: age(env, 'RETENTION_IDEMPOTENCY_BODY_HOURS', 24, 1),
    eventsDays: age(env, 'RETENTION_EVENTS_DAYS', 30, EVENTS_FLOOR_DAYS),
    webhookDeliveriesDays: age(env, 'RETENTION_WEBHOOK_DELIVERIES_DAYS', 30, EVENTS_FLOOR_DAYS),
    flowRunsDays: age(env, 'RETENTION_FLOW_RUNS_DAYS', 30, 1),
    // At least a day: the login-code caps count the codes of the last 24 hours.
    expiredDays: age(env, 'RETENTION_EXPIRED_DAYS', 1, 1),
    connectorEventsDays: age(env, 'RETENTION_CONNECTOR_EVENTS_DAYS', 30, 1),
  };
}
