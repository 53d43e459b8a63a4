import type { SwaggerTransform, SwaggerTransformObject } from '@fastify/swagger';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { Errors, type ErrorDef } from '../errors/registry.ts';
import { operationIdFor } from './operation-ids.ts';

/**
 * The OpenAPI document as generators and people need it (docs/openapi.md). @fastify/swagger builds
 * paths from the routes' zod schemas; this adds, in two hooks and without touching the routes:
 *
 * - per route (`routeTransform`): what the route's config says about it — who may call it
 *   (`config.auth`), whether a POST needs `x-idempotency` (`config.idempotent`), whether it takes
 *   the payer's `X-Customer-Token`;
 * - on the whole document (`documentTransform`): an `operationId` on every operation, the security
 *   scheme of each (secret key, publishable key, none, or secret key + customer token), the
 *   idempotency headers on the POSTs that need them, the rate-limit headers and 429 on every
 *   authenticated operation, the error statuses as shared responses that list the registry's
 *   codes, list envelopes named `<Item>List`, the OpenAPI 3.1 `webhooks`, the Markdown introduction
 *   and the request examples the API-docs module gives, and only the component schemas something
 *   uses (named ones come from the zod registry: `z.globalRegistry` ids).
 *
 * The domain content (introduction, webhooks, examples, names) lives in src/modules/api-docs,
 * which hands it over with `use()`; the platform knows no module.
 */

type Json = any;
type Auth = 'secret' | 'publishable' | 'none';

export interface WebhookDoc {
  /** The event type (`charge.paid`): the webhook's name in the document. */
  type: string;
  summary: string;
  description: string;
  /** The standard body: a zod schema registered with an id (a component schema). */
  payload: z.ZodType;
  example?: unknown;
}

export interface ApiDocs {
  /** Markdown for `info.description`. */
  introduction: string;
  /** `operationId` by `"METHOD /v1/path/{param}"` where the naming rule (operation-ids.ts) reads badly. */
  operationIds: Readonly<Record<string, string>>;
  /** A request body example by operationId. */
  requestExamples: Readonly<Record<string, unknown>>;
  webhooks: readonly WebhookDoc[];
  /** The headers every delivery carries (OpenAPI parameter objects). */
  webhookParameters: readonly Json[];
  tags: readonly { name: string; description: string }[];
  /** Component schemas kept although no operation or webhook refers to them. */
  keepSchemas: readonly string[];
}

interface RouteDoc {
  auth: Auth;
  idempotent: boolean;
  customerToken: boolean;
}

const SCHEMAS = '#/components/schemas/';
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** A name for each error status's shared response (components.responses). */
const STATUS_NAMES: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  408: 'RequestTimeout',
  409: 'Conflict',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
  418: 'LoginCodeTooSoon',
  422: 'UnprocessableEntity',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

/** What each status means before its list of codes. */
const STATUS_SUMMARIES: Record<number, string> = {
  400: 'The request is malformed: bad JSON, or a filter or sort the endpoint does not allow.',
  401: 'Not authenticated: no `Authorization: Bearer <key>` (or, on the payer-session routes, no valid `X-Customer-Token`).',
  403: 'Not allowed for this key or resource (a test-only route with a live key, a feature the company lacks).',
  404: 'Not found: the record does not exist, belongs to another company or to the other environment; an unknown API key is also 404.',
  409: 'A conflict: the POST has no usable `x-idempotency`, the key was reused with another body, or the resource is taken.',
  413: 'The body is larger than 1 MiB.',
  415: 'The body is not JSON.',
  418: 'A login code was asked again within a minute of the previous one.',
  422: 'Refused: a field is missing or invalid (`errors` by field), or the resource’s state does not allow the operation.',
  429: 'Too many requests: wait `Retry-After` seconds.',
  500: 'An unexpected failure; it is logged with the request id (`x-request-id`).',
  503: 'Temporarily unavailable (database unreachable, shutting down): retry after `Retry-After` seconds.',
};

export class OpenApiDocument {
  private docs: ApiDocs | null = null;
  private readonly routes = new Map<string, RouteDoc>();

  /** The domain content of the document (src/modules/api-docs); called once at start. */
  use(docs: ApiDocs): void {
    this.docs = docs;
  }

  /** @fastify/swagger's per-route transform: the zod schemas to JSON Schema, and what the route's config says. */
  readonly routeTransform: SwaggerTransform = (input) => {
    const out = jsonSchemaTransform(input as Parameters<typeof jsonSchemaTransform>[0]);
    const schema = out.schema as Json;
    if (!schema || schema.hide) return out;
    // Security comes from config.auth alone (below): a route's own `security` would say it twice.
    delete schema.security;
    const route = input.route;
    const config = (route.config ?? {}) as { auth?: Auth; idempotent?: boolean };
    const headers = schema.headers?.properties ?? {};
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).map((m) => String(m).toUpperCase());
    for (const method of methods) {
      if (method === 'HEAD') continue;
      this.routes.set(`${method} ${openApiPath(input.url)}`, {
        auth: config.auth ?? 'secret',
        idempotent: method === 'POST' && config.idempotent !== false && (config.auth ?? 'secret') !== 'none',
        customerToken: Object.keys(headers).some((h) => h.toLowerCase() === 'x-customer-token'),
      });
    }
    return out;
  };

  /** @fastify/swagger's whole-document transform (its result is cached by @fastify/swagger). */
  readonly documentTransform: SwaggerTransformObject = (input) => {
    const doc = jsonSchemaTransformObject(input) as Json;
    const docs = this.docs;
    doc.components ??= {};
    doc.components.schemas ??= {};
    if (docs) doc.info = { ...doc.info, description: docs.introduction };
    doc.components.securitySchemes = SECURITY_SCHEMES;
    doc.security = [{ secretKey: [] }];
    doc.components.headers = HEADERS;
    doc.components.parameters = PARAMETERS;
    doc.components.responses = errorComponents();

    const ids = new Map<string, string>();
    for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        const key = `${method.toUpperCase()} ${path}`;
        const route = this.routes.get(key) ?? { auth: 'secret', idempotent: false, customerToken: false };
        const operationId = docs?.operationIds[key] ?? operationIdFor(method, path);
        if (ids.has(operationId)) throw new Error(`OpenAPI: operationId ${operationId} of ${key} is also ${ids.get(operationId)}'s`);
        ids.set(operationId, key);
        op.operationId = operationId;
        decorateOperation(op, route);
        const example = docs?.requestExamples[operationId];
        const media = op.requestBody?.content?.['application/json'];
        if (example !== undefined && media) media.example = example;
      }
    }
    if (docs) {
      for (const id of Object.keys(docs.requestExamples)) {
        if (![...ids.keys()].includes(id)) throw new Error(`OpenAPI: a request example names ${id}, which no operation has`);
      }
    }
    nameListEnvelopes(doc);
    if (docs) doc.webhooks = webhooks(docs, ids);
    doc.tags = tagList(doc, docs?.tags ?? []);
    pruneSchemas(doc, docs?.keepSchemas ?? []);
    return doc;
  };
}

/** `/v1/customers/:id` → `/v1/customers/{id}` (the document's form). */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

const SECURITY_SCHEMES = {
  secretKey: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'sk_test_… / sk_live_…',
    description:
      'The secret API key, server side only: `Authorization: Bearer sk_test_…` (test mode) or `sk_live_…` (live). Never put it in a browser or an app.',
  },
  publishableKey: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'pk_test_… / pk_live_…',
    description:
      'The publishable key, safe in a browser: `Authorization: Bearer pk_test_…`. It only creates card tokens (POST /v1/tokens); every other route refuses it.',
  },
  customerToken: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Customer-Token',
    description: 'A payer session token from POST /v1/customers/login/verify, sent with the secret key that made it (valid 7 days).',
  },
};

const RATE_HEADERS = {
  'X-RateLimit-Limit': { $ref: '#/components/headers/X-RateLimit-Limit' },
  'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
};
const REQUEST_ID_HEADER = { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } };
const RETRY_HEADER = { 'Retry-After': { $ref: '#/components/headers/Retry-After' } };

const HEADERS = {
  'X-RateLimit-Limit': {
    description: 'Requests this API key may make per second (RATE_LIMIT_TEST / RATE_LIMIT_LIVE; test and live keys count apart).',
    schema: { type: 'integer', minimum: 0 },
    example: 100,
  },
  'X-RateLimit-Remaining': {
    description: 'Requests left in the current one-second window.',
    schema: { type: 'integer', minimum: 0 },
    example: 99,
  },
  'Retry-After': {
    description: 'Seconds to wait before sending the request again.',
    schema: { type: 'integer', minimum: 0 },
    example: 1,
  },
  'X-Request-Id': {
    description: 'The request’s id (yours if you sent a valid `x-request-id`); quote it to support.',
    schema: { type: 'string' },
    example: 'req_4d2c1b0a9f8e000001',
  },
};

const IDEMPOTENCY_KEY_SCHEMA = { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$' };
const PARAMETERS = {
  'x-idempotency': {
    name: 'x-idempotency',
    in: 'header',
    required: true,
    description:
      'A unique value per operation (a UUID). Repeating it within a minute of a successful answer replays that answer without running the operation again; an error is not remembered, so the same value may be retried. Missing: 409 `idempotency_error`. `Idempotency-Key` is accepted instead.',
    schema: IDEMPOTENCY_KEY_SCHEMA,
    example: '5f0c2a4e-8d1b-4c3a-9e7f-1a2b3c4d5e6f',
  },
  'Idempotency-Key': {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description: 'Another name for `x-idempotency` (SPEC shows it on POST /invoices); when both are sent, `x-idempotency` is used.',
    schema: IDEMPOTENCY_KEY_SCHEMA,
  },
};

/** Security, idempotency headers, rate-limit headers and error responses of one operation. */
function decorateOperation(op: Json, route: RouteDoc): void {
  const authenticated = route.auth !== 'none';
  if (route.auth === 'none') op.security = [];
  else if (route.auth === 'publishable') op.security = [{ publishableKey: [] }];
  else if (route.customerToken) op.security = [{ secretKey: [], customerToken: [] }];
  else op.security = [{ secretKey: [] }];
  if (route.customerToken) {
    op.parameters = (op.parameters ?? []).filter((p: Json) => !(p.in === 'header' && String(p.name).toLowerCase() === 'x-customer-token'));
    if (op.parameters.length === 0) delete op.parameters;
  }
  if (route.idempotent) {
    const own = (op.parameters ?? []).filter(
      (p: Json) => !(p.in === 'header' && ['x-idempotency', 'idempotency-key'].includes(String(p.name).toLowerCase())),
    );
    op.parameters = [...own, { $ref: '#/components/parameters/x-idempotency' }, { $ref: '#/components/parameters/Idempotency-Key' }];
  }

  const responses: Json = op.responses ?? {};
  for (const [status, response] of Object.entries<Json>(responses)) {
    const code = Number(status);
    const schema = response?.content?.['application/json']?.schema;
    if (code >= 400 && schema?.$ref === `${SCHEMAS}Error` && STATUS_NAMES[code]) {
      responses[status] = { $ref: `#/components/responses/${STATUS_NAMES[code]}` };
      continue;
    }
    if (response.description === 'Default Response') response.description = code === 204 ? 'No content' : code < 300 ? 'Success' : 'Error';
    response.headers = {
      ...(response.headers ?? {}),
      ...REQUEST_ID_HEADER,
      ...(authenticated ? RATE_HEADERS : {}),
      ...(code === 429 || code === 503 ? RETRY_HEADER : {}),
    };
  }
  if (authenticated && !responses['429']) responses['429'] = { $ref: `#/components/responses/${STATUS_NAMES[429]}` };
  op.responses = responses;
}

/** One shared response per error status of the registry, listing its codes (SPEC.md's and Recaudo's). */
function errorComponents(): Json {
  const byStatus = new Map<number, ErrorDef[]>();
  for (const def of Object.values(Errors) as ErrorDef[]) {
    const list = byStatus.get(def.status) ?? [];
    if (!list.some((d) => d.codeName === def.codeName && d.code === def.code && d.message === def.message)) list.push(def);
    byStatus.set(def.status, list);
  }
  const out: Json = {};
  for (const [status, defs] of [...byStatus].sort(([a], [b]) => a - b)) {
    const name = STATUS_NAMES[status] ?? `Error${status}`;
    const lines = defs.map((d) => `- ${d.codeName ? `\`${d.codeName}\`` : '(no code name)'}${d.code !== null ? ` (${d.code})` : ''}: ${d.message}`);
    const first = defs.find((d) => d.codeName === 'validation_error') ?? defs[0];
    const example: Json = { message: first.message };
    if (first.code !== null) example.code = first.code;
    if (first.codeName !== null) example.code_name = first.codeName;
    if (first.codeName === 'validation_error') example.errors = { amount: ['must be at least 1000'] };
    out[name] = {
      description: `${STATUS_SUMMARIES[status] ?? 'Error.'}\n\n${lines.join('\n')}`,
      headers: { ...REQUEST_ID_HEADER, ...RATE_HEADERS, ...(status === 429 || status === 503 ? RETRY_HEADER : {}) },
      content: { 'application/json': { schema: { $ref: `${SCHEMAS}Error` }, example } },
    };
  }
  return out;
}

/**
 * The list envelope of a named item becomes a component of its own (`Customer` → `CustomerList`),
 * with an example made from the item's. Lists of unnamed items stay inline.
 */
function nameListEnvelopes(doc: Json): void {
  const schemas = doc.components.schemas;
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of METHODS) {
      for (const response of Object.values<Json>(item[method]?.responses ?? {})) {
        const media = response?.content?.['application/json'];
        const s = media?.schema;
        const itemRef: unknown = s?.properties?.data?.items?.$ref;
        if (!s || s.type !== 'object' || !s.properties.current_page || typeof itemRef !== 'string' || !itemRef.startsWith(SCHEMAS)) continue;
        const name = `${itemRef.slice(SCHEMAS.length)}List`;
        if (!schemas[name]) {
          const example = listExample(s, schemas[itemRef.slice(SCHEMAS.length)]?.examples?.[0], `https://api.recaudo.co${path}`);
          schemas[name] = example ? { ...s, examples: [example] } : s;
        } else if (JSON.stringify({ ...schemas[name], examples: undefined }) !== JSON.stringify({ ...s, examples: undefined })) {
          continue; // another envelope shape: stays inline
        }
        media.schema = { $ref: `${SCHEMAS}${name}` };
      }
    }
  }
}

/** A one-item page of the envelope, when every required field of the envelope is one this knows. */
function listExample(envelope: Json, item: unknown, base: string): Json | undefined {
  if (item === undefined) return undefined;
  const page: Json = {
    data: [item],
    current_page: 1,
    first_page_url: `${base}?page=1`,
    from: 1,
    last_page: 1,
    last_page_url: `${base}?page=1`,
    next_page_url: null,
    path: base,
    per_page: 15,
    prev_page_url: null,
    to: 1,
    total: 1,
    has_more: false,
  };
  const props = Object.keys(envelope.properties ?? {});
  if (!(envelope.required ?? []).every((k: string) => k in page)) return undefined;
  return Object.fromEntries(Object.entries(page).filter(([k]) => props.includes(k)));
}

/** OpenAPI 3.1 `webhooks`: one POST per event type, its body the type's component schema. */
function webhooks(docs: ApiDocs, ids: Map<string, string>): Json {
  const out: Json = {};
  for (const w of docs.webhooks) {
    const id = z.globalRegistry.get(w.payload)?.id;
    if (!id) throw new Error(`OpenAPI: the payload schema of webhook ${w.type} has no registry id`);
    const operationId = `${w.type.replace(/[._]([a-z])/g, (_, c: string) => c.toUpperCase())}Webhook`;
    if (ids.has(operationId)) throw new Error(`OpenAPI: operationId ${operationId} of webhook ${w.type} is also ${ids.get(operationId)}'s`);
    ids.set(operationId, `webhook ${w.type}`);
    out[w.type] = {
      post: {
        operationId,
        summary: w.summary,
        description: w.description,
        tags: ['Webhooks'],
        security: [],
        parameters: docs.webhookParameters,
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: `${SCHEMAS}${id}` }, ...(w.example !== undefined ? { example: w.example } : {}) } },
        },
        responses: {
          '200': { description: 'Any 2xx answered within 30 seconds acknowledges the delivery; anything else is retried for about 3 days.' },
        },
      },
    };
  }
  return out;
}

/** The tags operations and webhooks use, described ones first in the given order, then the others by name. */
function tagList(doc: Json, described: readonly { name: string; description: string }[]): Json[] {
  const used = new Set<string>();
  for (const item of [...Object.values<Json>(doc.paths ?? {}), ...Object.values<Json>(doc.webhooks ?? {})]) {
    for (const method of METHODS) for (const tag of item[method]?.tags ?? []) used.add(tag);
  }
  const first = described.filter((t) => used.has(t.name)).map((t) => ({ ...t }));
  const rest = [...used].filter((name) => !described.some((t) => t.name === name)).sort();
  return [...first, ...rest.map((name) => ({ name }))];
}

/** Drops component schemas nothing refers to (the registry's unused `…Input` copies among them). */
function pruneSchemas(doc: Json, keep: readonly string[]): void {
  const schemas: Json = doc.components.schemas;
  const used = new Set<string>(keep.filter((k) => k in schemas));
  const visit = (node: Json): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries<Json>(node)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith(SCHEMAS)) {
        const name = v.slice(SCHEMAS.length);
        if (!used.has(name) && schemas[name]) {
          used.add(name);
          visit(schemas[name]);
        }
      } else visit(v);
    }
  };
  visit({ paths: doc.paths, webhooks: doc.webhooks, responses: doc.components.responses });
  for (const name of [...used]) visit(schemas[name]);
  for (const name of Object.keys(schemas)) if (!used.has(name)) delete schemas[name];
}
