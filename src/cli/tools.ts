import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { randomToken } from '../platform/ids.ts';
import { signBody } from '../modules/webhooks/signature.ts';
import { deliveryBody } from '../modules/webhooks/body.ts';
import type { KeyView } from '../modules/companies/operator.ts';

/**
 * Developer tools that speak the public API with a test key (docs/operations.md "Developer tools"):
 * `recaudo listen --forward-to URL` re-posts each new event, signed like a webhook delivery, to a
 * local URL; `recaudo trigger EVENT` calls the API to cause an event. And `recaudo keys list`.
 */

export class ToolError extends Error {}

const USER_AGENT = 'Recaudo-CLI-Listen/1.0';

interface Api {
  base: string;
  key: string;
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
}

function api(values: { 'api-key'?: string; 'api-url'?: string }, env: NodeJS.ProcessEnv): Api {
  const key = values['api-key'] ?? env.RECAUDO_API_KEY ?? '';
  if (!key) throw new ToolError('give a test secret key: --api-key sk_test_... (or RECAUDO_API_KEY)');
  // Test keys only: these tools make objects and read every event of the environment.
  if (!key.startsWith('sk_test_')) throw new ToolError('only a test secret key (sk_test_...) is accepted: these tools never touch live data');
  const base = (values['api-url'] ?? env.RECAUDO_API_URL ?? `http://localhost:${env.PORT || 3000}`).replace(/\/+$/, '');
  return {
    base,
    key,
    async call(method, path, body) {
      const headers: Record<string, string> = { authorization: `Bearer ${key}` };
      if (body !== undefined) headers['content-type'] = 'application/json';
      if (method === 'POST') headers['x-idempotency'] = randomUUID();
      let res: Response;
      try {
        res = await fetch(path.startsWith('http') ? path : `${base}${path}`, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (error) {
        throw new ToolError(`cannot reach ${base}: ${(error as Error).cause ?? (error as Error).message}`);
      }
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        /* not JSON */
      }
      return { status: res.status, body: parsed };
    },
  };
}

function expectOk(what: string, res: { status: number; body: any }): any {
  if (res.status >= 200 && res.status < 300) return res.body;
  throw new ToolError(`${what}: ${res.status} ${typeof res.body === 'object' ? JSON.stringify(res.body) : String(res.body)}`);
}

interface ListedEvent {
  id: string;
  event: string;
  created_at: string;
  [k: string]: unknown;
}

/**
 * Events are read from GET /v1/events by time (there is no stream): each poll reads from a little
 * before the newest event seen (a transaction that committed late may carry an earlier time) and
 * skips the ids already forwarded.
 */
const LOOKBACK_MS = 60_000;
const SEEN_LIMIT = 50_000;

export async function listen(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      'forward-to': { type: 'string' },
      'api-key': { type: 'string' },
      'api-url': { type: 'string' },
      events: { type: 'string' },
      since: { type: 'string' },
      secret: { type: 'string' },
      token: { type: 'string' },
      'payload-format': { type: 'string' },
      'interval-ms': { type: 'string' },
      'max-events': { type: 'string' },
    },
    strict: true,
  });
  const target = values['forward-to'];
  if (!target || !/^https?:\/\/\S+$/.test(target)) throw new ToolError('--forward-to must be an http:// or https:// URL');
  const format = values['payload-format'] ?? 'standard';
  if (format !== 'standard' && format !== 'legacy') throw new ToolError('--payload-format must be standard or legacy');
  const interval = values['interval-ms'] === undefined ? 1000 : Number(values['interval-ms']);
  if (!Number.isInteger(interval) || interval < 50) throw new ToolError('--interval-ms must be at least 50');
  const maxEvents = values['max-events'] === undefined ? Infinity : Number(values['max-events']);
  if (!(maxEvents >= 1)) throw new ToolError('--max-events must be at least 1');
  const since = values.since ? new Date(values.since) : new Date();
  if (Number.isNaN(since.getTime())) throw new ToolError('--since must be an ISO 8601 time');
  const types = values.events ? new Set(values.events.split(',').map((t) => t.trim())) : null;
  const client = api(values, env);
  // Like a webhook's: the receiver checks them exactly as it checks a delivery (docs/webhooks.md).
  const secret = values.secret ?? env.RECAUDO_LISTEN_SECRET ?? `wh_tok_${randomToken(40)}`;
  const token = values.token ?? env.RECAUDO_LISTEN_TOKEN ?? `wh_hdr_${randomToken(32)}`;
  expectOk('GET /v1/events', await client.call('GET', '/v1/events?per_page=1'));
  process.stderr.write(
    `Forwarding ${types ? [...types].join(', ') : 'every'} test event to ${target}\n` +
      `  signing secret (Signature): ${secret}\n  token (x-webhook-token): ${token}\nCtrl-C to stop.\n`,
  );

  const seen = new Set<string>();
  let newest = since.getTime();
  let forwarded = 0;
  let stopping = false;
  const stop = () => (stopping = true);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    while (!stopping) {
      const from = new Date(Math.max(since.getTime(), newest - LOOKBACK_MS)).toISOString();
      let next: string | null = `/v1/events?sort=created_at&per_page=100&filter[created_at][gte]=${encodeURIComponent(from)}`;
      while (next && !stopping) {
        const page: { data: ListedEvent[]; next_page_url: string | null } = expectOk('GET /v1/events', await client.call('GET', next));
        for (const event of page.data) {
          if (seen.has(event.id)) continue;
          seen.add(event.id);
          if (seen.size > SEEN_LIMIT) seen.delete(seen.values().next().value!);
          newest = Math.max(newest, new Date(event.created_at).getTime());
          if (new Date(event.created_at).getTime() < since.getTime() || (types && !types.has(event.event))) continue;
          await forward(target, event, { secret, token, format });
          if (++forwarded >= maxEvents) return 0;
        }
        next = page.next_page_url;
      }
      await new Promise((resolve) => setTimeout(resolve, interval));
    }
    return 0;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

async function forward(target: string, event: ListedEvent, opts: { secret: string; token: string; format: 'standard' | 'legacy' }): Promise<void> {
  // The standard body is the event exactly as the API lists it (compact JSON, the API's field order).
  const body = deliveryBody(JSON.stringify(event), opts.format);
  const started = performance.now();
  let outcome: string;
  try {
    const res = await fetch(target, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'x-webhook-event': event.event,
        'x-webhook-id': event.id,
        'x-webhook-token': opts.token,
        Signature: signBody(opts.secret, body),
      },
      body,
      signal: AbortSignal.timeout(30_000),
    });
    await res.arrayBuffer();
    outcome = String(res.status);
  } catch (error) {
    outcome = `error: ${String((error as Error).cause ?? (error as Error).message)}`;
  }
  process.stdout.write(`${event.created_at}  ${event.event}  ${event.id}  → ${outcome} (${Math.round(performance.now() - started)} ms)\n`);
}

/** What `recaudo trigger` can cause, and how (test objects through the public API). */
export const TRIGGERS: Record<string, string> = {
  'charge.paid': 'a customer, a test card (4242…) and a charge on it, paid',
  'charge.failed': 'a customer, a declined test card (4000000000000002) and a charge on it, failed',
  'charge.refunded': 'a customer, a test card, a refundable test charge (test_scenario refundable) and its refund',
  'payment.created': 'a payment link',
  'payment.deleted': 'a payment link, then DELETE of it',
};

export async function trigger(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { 'api-key': { type: 'string' }, 'api-url': { type: 'string' }, json: { type: 'boolean' } },
    strict: true,
    allowPositionals: true,
  });
  const event = positionals[0];
  if (positionals.length !== 1 || !TRIGGERS[event]) {
    throw new ToolError(
      `trigger takes one of these events:\n${Object.entries(TRIGGERS)
        .map(([e, what]) => `  ${e.padEnd(16)} ${what}`)
        .join('\n')}`,
    );
  }
  const client = api(values, env);
  const created: { object: string; id: string; status?: string }[] = [];
  const post = async (object: string, path: string, body: unknown) => {
    const out = expectOk(`POST ${path}`, await client.call('POST', path, body));
    created.push({ object, id: out.id, ...(out.status ? { status: out.status } : {}) });
    return out;
  };
  if (event.startsWith('charge.')) {
    const customer = await post('customer', '/v1/customers', {
      first_name: 'Ana',
      last_name: 'Trigger',
      email: `trigger.${randomToken(6).toLowerCase()}@example.com`,
    });
    const card = await post('card', '/v1/cards', {
      card_number: event === 'charge.failed' ? '4000000000000002' : '4242424242424242',
      expiration_month: '12',
      expiration_year: String(new Date().getUTCFullYear() + 3),
      cvv: '123',
      holder_name: 'Ana Trigger',
      customer_id: customer.id,
      authorization: true,
    });
    const charge = await post('charge', '/v1/charges', {
      amount: 150000,
      title: `recaudo trigger ${event}`,
      customer_id: customer.id,
      card_id: card.id,
      ...(event === 'charge.refunded' ? { test_scenario: 'refundable' } : {}),
    });
    if (event === 'charge.refunded') await post('refund', `/v1/charges/${charge.id}/refund`, {});
  } else {
    const payment = await post('payment', '/v1/payments', { title: `recaudo trigger ${event}`, amount: 150000 });
    if (event === 'payment.deleted') {
      expectOk(`DELETE /v1/payments/${payment.id}`, await client.call('DELETE', `/v1/payments/${payment.id}`));
      created.push({ object: 'payment (deleted)', id: payment.id });
    }
  }
  if (values.json) process.stdout.write(`${JSON.stringify({ event, created })}\n`);
  else
    process.stdout.write(
      `${event} triggered:\n${created.map((c) => `  ${c.object.padEnd(18)} ${c.id}${c.status ? ` (${c.status})` : ''}`).join('\n')}\n`,
    );
  return 0;
}

export function describeKeys(out: { company: { id: string }; keys: KeyView[] }): string {
  if (!out.keys.length) return `company ${out.company.id} has no keys`;
  return out.keys
    .map(
      (k) =>
        `${k.id}  ${k.prefix.padEnd(16)} ${k.environment.padEnd(4)} ${k.kind.padEnd(11)} ${(k.name ?? 'main').padEnd(12)} created ${k.created_at}  ${k.revoked_at ? `revoked ${k.revoked_at}` : 'active'}`,
    )
    .join('\n');
}
