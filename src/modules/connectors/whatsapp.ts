import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../../platform/context.ts';
import type { Executor } from '../../platform/db/database.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { errorResponses } from '../../platform/http/openapi.ts';
import { inTenant, iso, type Tenant } from '../../platform/scope.ts';
import { openSecret, sealSecret } from '../../platform/secrets.ts';
import { WHATSAPP_PURPOSES, WhatsAppMessaging, type RailScope, type WhatsAppPurpose } from '../../rails/index.ts';
import type { WhatsAppConnectorsTable } from './tables.ts';
import type { Selectable } from 'kysely';
import './tables.ts';

/**
 * The WhatsApp Business Cloud API connector of a company's environment (docs/whatsapp.md): its
 * settings (`GET/PUT/DELETE /v1/connectors/whatsapp`, secrets sealed and write-only), the contact
 * rail it installs for live messages, and its webhook (`/v1/rails/whatsapp/events/{token}`: Meta's
 * GET verification and its signed POST notifications).
 *
 * Meta has no sandbox environment (its test numbers are production numbers), and test keys never
 * reach a provider's production: a test environment's connector is stored and its webhook verifies,
 * but test messages stay on the messaging sandbox (`sends: false`).
 */
type Row = Selectable<WhatsAppConnectorsTable>;
const SECRETS = ['access_token', 'app_secret', 'verify_token'] as const;
type Secret = (typeof SECRETS)[number];

const secret = (what: string) =>
  z
    .string()
    .trim()
    .min(8, 'must be at least 8 characters')
    .max(1024, 'must be at most 1024 characters')
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
    .describe(what);
const templateName = z
  .string()
  .regex(/^[a-z0-9_]{1,512}$/, 'must be a template name as Meta stores it: lowercase letters, digits and _')
  .nullable();

export const putWhatsAppBody = z
  .object({
    phone_number_id: z
      .string()
      .regex(/^\d{5,30}$/, "must be the number's id at Meta (digits), not the phone number")
      .optional(),
    access_token: secret('a system user access token with whatsapp_business_messaging; write-only').optional(),
    app_secret: secret("the Meta app's secret: checks X-Hub-Signature-256 of every notification; write-only").optional(),
    verify_token: secret('a token of your choosing, typed in Meta’s webhook settings: answers its verification; write-only').optional(),
    templates: z
      .object(
        Object.fromEntries(WHATSAPP_PURPOSES.map((p) => [p, templateName.optional()])) as Record<WhatsAppPurpose, z.ZodOptional<typeof templateName>>,
      )
      .strict()
      .optional()
      .describe('the approved template of each purpose (docs/whatsapp.md "Templates"); null removes one'),
    language: z
      .string()
      .regex(/^[a-z]{2,3}(_[A-Z]{2})?$/, 'must be a language code of Meta’s list, e.g. es or es_MX')
      .optional()
      .describe('the language the templates were approved in (default es)'),
  })
  .strict();
export type PutWhatsAppBody = z.infer<typeof putWhatsAppBody>;

const secretSummary = z.object({ set: z.boolean(), last4: z.string().nullable() });
export const whatsappResponse = z.object({
  name: z.literal('whatsapp'),
  environment: z.enum(['test', 'live']),
  phone_number_id: z.string(),
  access_token: secretSummary,
  app_secret: secretSummary,
  verify_token: secretSummary,
  templates: z.record(z.string(), z.string().nullable()),
  language: z.string(),
  sends: z.boolean().describe('true in live: messages go out through it; test messages stay on the sandbox (Meta has no sandbox)'),
  events_url: z.string().describe('the callback URL to set in Meta’s webhook settings (subscribe to the messages field)'),
  created_at: z.string(),
  updated_at: z.string(),
});
export type WhatsAppResponse = z.infer<typeof whatsappResponse>;

function toResponse(deps: AppDeps, row: Row): WhatsAppResponse {
  const hints = JSON.parse(row.secret_hints) as Partial<Record<Secret, string>>;
  const summary = (s: Secret) => ({ set: true, last4: hints[s] ?? null });
  const templates = JSON.parse(row.templates) as Record<string, string | null>;
  return {
    name: 'whatsapp',
    environment: row.environment,
    phone_number_id: row.phone_number_id,
    access_token: summary('access_token'),
    app_secret: summary('app_secret'),
    verify_token: summary('verify_token'),
    templates: Object.fromEntries(WHATSAPP_PURPOSES.map((p) => [p, templates[p] ?? null])),
    language: row.language,
    sends: row.environment === 'live',
    events_url: `${deps.config.baseUrl.replace(/\/+$/, '')}/v1/rails/whatsapp/events/${row.events_token}`,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

function findRow(db: Executor, scope: Tenant): Promise<Row | undefined> {
  return db.selectFrom('whatsapp_connectors').selectAll().$call(inTenant(scope)).executeTakeFirst();
}

export async function getWhatsApp(deps: AppDeps, db: Executor, scope: Tenant): Promise<WhatsAppResponse> {
  const row = await findRow(db, scope);
  if (!row) throw new ApiError('record_not_found', { message: 'No WhatsApp connector in this environment: PUT /v1/connectors/whatsapp.' });
  return toResponse(deps, row);
}

/** PUT: fields not sent keep their value; the first PUT needs the number's id and every secret. */
export async function putWhatsApp(deps: AppDeps, db: Executor, scope: Tenant, body: PutWhatsAppBody, now: Date): Promise<WhatsAppResponse> {
  const current = await findRow(db, scope);
  const errors: Record<string, string[]> = {};
  if (!current) {
    for (const field of ['phone_number_id', ...SECRETS] as const) if (body[field] === undefined) errors[field] = ['is required the first time'];
  }
  if (Object.keys(errors).length) throw validationError(errors);
  const hints = current ? (JSON.parse(current.secret_hints) as Record<string, string>) : {};
  const sealed: Partial<Record<`${Secret}_sealed`, string>> = {};
  for (const s of SECRETS) {
    const value = body[s];
    if (value === undefined) continue;
    sealed[`${s}_sealed`] = sealSecret(deps.secrets, value);
    hints[s] = value.slice(-4);
  }
  const templates = { ...(current ? (JSON.parse(current.templates) as Record<string, string | null>) : {}), ...(body.templates ?? {}) };
  const values = {
    phone_number_id: body.phone_number_id ?? current!.phone_number_id,
    ...sealed,
    secret_hints: JSON.stringify(hints),
    templates: JSON.stringify(templates),
    language: body.language ?? current?.language ?? 'es',
    updated_at: now,
  };
  const row = current
    ? await db.updateTable('whatsapp_connectors').set(values).$call(inTenant(scope)).returningAll().executeTakeFirstOrThrow()
    : await db
        .insertInto('whatsapp_connectors')
        .values({
          company_id: scope.companyId,
          environment: scope.environment,
          ...(values as typeof values & Record<`${Secret}_sealed`, string>),
          events_token: `wet_${randomBytes(24).toString('base64url')}`,
          created_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
  return toResponse(deps, row);
}

export async function deleteWhatsApp(db: Executor, scope: Tenant): Promise<void> {
  const gone = await db.deleteFrom('whatsapp_connectors').$call(inTenant(scope)).executeTakeFirst();
  if (!gone.numDeletedRows) throw new ApiError('record_not_found');
}

function adapterOf(deps: AppDeps, row: Row): WhatsAppMessaging {
  const open = (value: string) => openSecret(deps.secrets, value);
  return new WhatsAppMessaging({
    graphUrl: deps.config.whatsappGraph.url,
    version: deps.config.whatsappGraph.version,
    timeoutMs: deps.config.whatsappGraph.timeoutMs,
    phoneNumberId: row.phone_number_id,
    accessToken: open(row.access_token_sealed),
    appSecret: open(row.app_secret_sealed),
    templates: JSON.parse(row.templates) as Partial<Record<WhatsAppPurpose, string>>,
    language: row.language,
  });
}

/**
 * The contact source (rails.contactFor): installs the live environment's WhatsApp adapter from its
 * stored settings, and removes it when they are gone; settings are read again after a few seconds,
 * so a PUT in another process takes effect within CONNECTOR_SETTINGS_TTL_MS.
 */
const sources = new WeakMap<AppDeps, ReturnType<typeof makeContactSource>>();

/**
 * The runtime's one WhatsApp contact source, registered with the rails the first time it is asked
 * for: by the job handlers (every process that sends, workers included) and by the routes.
 */
export function whatsappContactSource(deps: AppDeps): ReturnType<typeof makeContactSource> {
  let source = sources.get(deps);
  if (!source) {
    const made = makeContactSource(deps);
    sources.set(deps, made);
    deps.rails.setContactSource((scope) => made.sync(scope));
    source = made;
  }
  return source;
}

function makeContactSource(deps: AppDeps) {
  const installed = new Map<string, { version: string; uninstall: () => void; adapter: WhatsAppMessaging }>();
  const checked = new Map<string, number>();
  const key = (scope: Tenant) => `${scope.companyId}:${scope.environment}`;
  const sync = async (scope: RailScope & { db?: unknown }, force = false) => {
    if (scope.environment !== 'live') return;
    const k = key(scope);
    const now = Date.now();
    if (!force && (checked.get(k) ?? 0) > now) return;
    checked.set(k, now + deps.config.connectorSettingsTtlMs);
    const row = await findRow((scope.db as Executor | undefined) ?? deps.database.db, scope);
    const version = row ? `${iso(row.updated_at)}` : '';
    const current = installed.get(k);
    if (current?.version === version) return;
    current?.uninstall();
    installed.delete(k);
    if (!row) return;
    const adapter = adapterOf(deps, row);
    installed.set(k, { version, adapter, uninstall: deps.rails.installContact(scope, { messaging: adapter }) });
  };
  return {
    sync,
    /** The adapter that receives this company's webhooks (installed for live; a transient one for test). */
    async adapterFor(scope: Tenant, row: Row): Promise<WhatsAppMessaging> {
      if (scope.environment === 'live') {
        await sync(scope, true);
        const found = installed.get(key(scope));
        if (found) return found.adapter;
      }
      return adapterOf(deps, row);
    },
    forget(scope: Tenant) {
      checked.delete(key(scope));
    },
  };
}

const challengeQuery = z.object({
  'hub.mode': z.string().optional(),
  'hub.verify_token': z.string().optional(),
  'hub.challenge': z.string().max(512).optional(),
});

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function whatsappRoutes(app: FastifyInstance, deps: AppDeps): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Connectors'];
  const source = whatsappContactSource(deps);

  r.get('/connectors/whatsapp', {
    schema: {
      tags,
      summary: "The environment's WhatsApp connector (secrets as a summary)",
      response: { 200: whatsappResponse, ...errorResponses(401, 404) },
    },
    handler: async (req) => getWhatsApp(deps, req.ctx.db, req.ctx),
  });
  r.put('/connectors/whatsapp', {
    schema: {
      tags,
      summary: 'Connect a WhatsApp Business number (Cloud API) for this environment',
      description:
        'Fields not sent keep their value; the first PUT needs phone_number_id and the three secrets, which are write-only and sealed. Set events_url as the callback URL in Meta’s webhook settings with the same verify_token. Live messages then go out as the approved templates; test keys stay on the sandbox.',
      body: putWhatsAppBody,
      response: { 200: whatsappResponse, ...errorResponses(401, 404, 422) },
    },
    handler: async (req) => {
      const out = await putWhatsApp(deps, req.ctx.db, req.ctx, req.body, deps.clock.now());
      source.forget(req.ctx);
      return out;
    },
  });
  r.delete('/connectors/whatsapp', {
    schema: {
      tags,
      summary: 'Disconnect the WhatsApp number of this environment',
      description: 'Live messages by phone are refused again (channel_not_configured) unless a gateway is configured.',
      response: { 204: z.null().describe('No content'), ...errorResponses(401, 404) },
    },
    handler: async (req, reply) => {
      await deleteWhatsApp(req.ctx.db, req.ctx);
      source.forget(req.ctx);
      return reply.code(204).send(null);
    },
  });

  const byToken = (token: string) =>
    /^wet_[A-Za-z0-9_-]{32}$/.test(token)
      ? deps.database.db.selectFrom('whatsapp_connectors').selectAll().where('events_token', '=', token).executeTakeFirst()
      : Promise.resolve(undefined);

  // Meta's verification of the callback URL: the verify token typed in its settings, answered with the challenge as text.
  r.get('/rails/whatsapp/events/:token', {
    config: { auth: 'none' },
    schema: { hide: true, params: z.object({ token: z.string().max(100) }), querystring: challengeQuery },
    handler: async (req, reply) => {
      const row = await byToken(req.params.token);
      if (!row) return reply.code(404).type('text/plain').send('unknown');
      const q = req.query;
      const expected = openSecret(deps.secrets, row.verify_token_sealed);
      if (q['hub.mode'] !== 'subscribe' || typeof q['hub.verify_token'] !== 'string' || !sameText(q['hub.verify_token'], expected)) {
        return reply.code(403).type('text/plain').send('forbidden');
      }
      return reply
        .code(200)
        .type('text/plain')
        .send(q['hub.challenge'] ?? '');
    },
  });

  // Meta's notifications: signed with the app secret over the exact bytes; statuses and replies move our messages.
  r.post('/rails/whatsapp/events/:token', {
    config: { auth: 'none' },
    schema: { hide: true, params: z.object({ token: z.string().max(100) }) },
    handler: async (req, reply) => {
      const row = await byToken(req.params.token);
      if (!row) return reply.code(404).send({ error: 'unknown' });
      const raw = (req as FastifyRequest & { rawBody?: string }).rawBody ?? '';
      const adapter = await source.adapterFor({ companyId: row.company_id, environment: row.environment }, row);
      const header = req.headers['x-hub-signature-256'];
      const result = await adapter.receiveWebhook(Buffer.from(raw, 'utf8'), Array.isArray(header) ? header[0] : header);
      return reply.code(result.statusCode).send(result.body);
    },
  });
}
