import { Errors, type ErrorDef } from '../../platform/errors/registry.ts';

/** The error table of the introduction: every code of the registry (SPEC.md's first), by HTTP status. */
function errorTable(): string {
  const rows = (Object.values(Errors) as ErrorDef[])
    .filter((d, i, all) => all.findIndex((o) => o.codeName === d.codeName && o.code === d.code && o.message === d.message) === i)
    .map((d) => `| ${d.status} | ${d.code ?? '—'} | ${d.codeName ? `\`${d.codeName}\`` : '—'} | ${d.message.replace(/\|/g, '\\|')} |`);
  return ['| HTTP | code | code_name | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** `info.description` of the OpenAPI document: what a developer reads first on /docs. */
export const INTRODUCTION = `Recaudo collects payments (cards, bank debits, bank transfers, instant-key QR, wallets, payment links, subscriptions), pays out, and issues DIAN electronic invoices for Colombian companies.

Every path is under \`/v1\`. Bodies are JSON (\`content-type: application/json\`, at most 1 MiB); so are answers. Each operation below has an \`operationId\` that generated SDKs use as its function name (the official TypeScript one is \`@recaudo/node\`).

## Authentication

Send an API key as a bearer token: \`Authorization: Bearer sk_test_…\`.

| Key | Prefix | Where | What it may do |
|---|---|---|---|
| Secret key (\`secretKey\`) | \`sk_test_\` / \`sk_live_\` | your server only | every operation but one |
| Publishable key (\`publishableKey\`) | \`pk_test_\` / \`pk_live_\` | a browser or an app | only \`POST /v1/tokens\` (card tokens), from your allowed origins |

A missing key is \`401 unauthenticated\`; an unknown key, or a key of the wrong kind, is \`404\` (an invalid key never tells what exists). The payer-session routes (\`/v1/customers/session…\`) also take the payer's \`X-Customer-Token\` from \`POST /v1/customers/login/verify\`. The bank logo, the rails' own callbacks and this document need no key.

## Test mode

Test keys (\`sk_test_…\`) work on a separate set of data and never touch a real rail: every rail has a simulator with the outcomes listed in the repository's \`docs/testing.md\` (card \`4242424242424242\` approves, \`4000000000000002\` declines; \`test_scenario\` on charges, cash-outs and invoices; \`POST …/resolve\` to settle a test charge, payment or dispute by hand; test clocks to move subscriptions through time). Test and live objects never mix: an id of the other environment is \`404 environment_key_mismatch\`. Objects carry \`is_test\`. A live operation whose rail has no connector configured is refused (\`422 rail_not_configured\`, 10900) before anything is created.

## Idempotency

Every \`POST\` marked with the \`x-idempotency\` header needs one (\`Idempotency-Key\` is accepted as another name): a unique value per operation, such as a UUID. Without it the answer is \`409 idempotency_error\` (10003) and nothing runs.

- Sending the same value again within **one minute** of a successful answer returns that same answer (status and body) without running the operation again — retry a timed-out request with the same value.
- An error is not remembered: after a \`4xx\` or \`5xx\` the same value may be sent again.
- Two requests with the same value at once: the second waits for the first and gets its answer.
- The same value with a different body or path is \`409 idempotency_error\`; after the minute the value runs again as new.
- Three POSTs take no key: \`POST /v1/flows\`, \`POST /v1/request-to-pay/walleta/{id}/confirm\` and \`POST /v1/companies/{id}/keys\`.

## Errors

Errors answer \`{message, code, code_name, errors?}\`: branch on \`code_name\` (some codes are shared, such as 15004), show \`message\`. Validation errors (\`422 validation_error\`, 10001) list messages by field in \`errors\` (\`{"amount": ["must be at least 1000"]}\`); invoicing errors use a string \`code\`. A declined charge is **not** an HTTP error: it is \`200\` with \`status: failed\` and the reason in \`remarks\`. Every answer carries \`x-request-id\`; quote it to support.

${errorTable()}

## Rate limits

Each API key may make a number of requests per second (\`RATE_LIMIT_TEST\` and \`RATE_LIMIT_LIVE\` on the server). Every authenticated answer carries \`X-RateLimit-Limit\` and \`X-RateLimit-Remaining\`; past the limit the answer is \`429\` with \`Retry-After\` (seconds). The payer-session routes and the login codes have their own per-customer and per-phone limits (also \`429\` with \`Retry-After\`). A \`503\` also carries \`Retry-After\`.

## Lists

List operations take \`page\` and \`per_page\` (1 to 100), \`filter[<field>]\` and \`sort=<field>\` or \`sort=-<field>\` on the fields each one names; others are \`400\`. They answer an envelope: \`data\` plus \`current_page\`, \`per_page\`, \`total\`, \`next_page_url\`, \`prev_page_url\`… (the \`…List\` schemas).

## Webhooks

Create a webhook (\`POST /v1/webhooks\`) with a URL and the event types it wants (the catalogue: \`GET /v1/events/types\`). Each event is \`POST\`ed to it as \`{id, event, created_at, is_test, data}\`, where \`data\` is the object as the API returns it; the **Webhooks** section lists every type and its body. Check each delivery before trusting it:

1. \`Signature\` is the hex HMAC-SHA256 of the **raw body bytes** with the webhook's \`secret\` (shown once, at creation): compute it over the bytes you received and compare in constant time.
2. \`x-webhook-token\` equals the webhook's \`header\`.
3. Deduplicate on \`x-webhook-id\` (the event id): delivery is at least once.

Answer any \`2xx\` within 30 seconds; anything else is retried for about three days (30 s, 2 m, 10 m … 72 h). A webhook created with \`payload_format: legacy\` gets OnePay's older body \`{"<resource>": data, "event": {"type", "timestamp", "environment"}}\` with the same headers. Test events go only to test webhooks. The same events can be read back with \`GET /v1/events\`.
`;
