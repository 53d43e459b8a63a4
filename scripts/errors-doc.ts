// Renders docs/errors.md from the error registry: `node --import tsx scripts/errors-doc.ts > docs/errors.md`.
import { Errors } from '../src/platform/errors/registry.ts';

export function renderErrorsDoc(): string {
  const rows = Object.entries(Errors).map(
    ([name, d]) => `| ${d.code ?? '(none)'} | ${d.codeName ?? '(none)'} | ${d.status} | \`${name}\` | ${d.message} |`,
  );
  return [
    '# Errors',
    '',
    'Every error answers the envelope `{message, code, code_name, errors?}`. `code` is absent where',
    'SPEC.md shows none (`environment_key_mismatch`, and the uncoded 400/403/429 of its "Errors without',
    'a code" table). `errors` maps each field (dotted path, e.g. `address.city_code`) to a list of',
    'messages. A 500 (`internal_error`, 90000) only ever means a bug; it is logged with the request id,',
    'and the body never carries a stack trace.',
    '',
    "Codes 10005–10012, 10512–10513, 10600, 10700, 10900–10901 and 90000 are Recaudo's own, for situations SPEC.md leaves open",
    '(malformed JSON, wrong content type, bodies over 1 MB, unknown routes, shutting down, a balance too',
    'low for a refund or cash-out (docs/ledger.md), bodies nested too deep (docs/platform.md), a live key',
    'whose rail has no connector (`rail_not_configured`, with `rail` in the body: docs/rails.md), a',
    'refund of a charge whose connector cannot give money back (`rail_refund_unavailable`, with `rail`:',
    'docs/connectors.md), a campaign whose image or video cannot be fetched (`media_unreachable`, 422, with',
    'the field in `errors`) or that can no longer be cancelled (docs/campaigns.md), bugs).',
    '',
    'This table is generated from `src/platform/errors/registry.ts` (`node --import tsx scripts/errors-doc.ts`);',
    'a test fails when it is out of date.',
    '',
    '| code | code_name | HTTP | registry name | default message |',
    '|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

if (process.argv[1]?.endsWith('errors-doc.ts')) process.stdout.write(renderErrorsDoc());
