/**
 * The OpenAPI `operationId` of an operation, derived from its method and path so that every route
 * gets one without writing it by hand, and so that it only changes when the path does (generated
 * SDKs name their functions after it: a rename breaks their callers). The API-docs module
 * (src/modules/api-docs) overrides the few paths the rule reads badly.
 *
 * The rule, on the path without `/v1`:
 * - ends with a parameter (`/customers/{id}`): GET get, PUT update, DELETE delete, POST the
 *   method's name, then the path's words singular: `getCustomer`, `getInvoiceCreditNote`.
 * - ends with a plural word (a collection: `/customers`, `/customers/{id}/cards`): GET list with the
 *   words (the last one plural), POST create with the words singular: `listCustomerCards`,
 *   `createCustomer`, `createCustomerTransaction`.
 * - ends with another word after a parameter (an action or a sub-resource: `/charges/{id}/refund`,
 *   `/invoices/{id}/xml`): POST is the action on the resource (`refundCharge`), GET/PUT/DELETE
 *   name the sub-resource (`getInvoiceXml`).
 * - ends with another word after a word (`/company/payout-account`, `/charges/banklink`): GET
 *   get, PUT update, DELETE delete, POST create, then the words: `getCompanyPayoutAccount`.
 */
export function operationIdFor(method: string, url: string): string {
  const path = url.replace(/^\/v1(?=\/)/, '');
  const segments = path.split('/').filter(Boolean);
  const isParam = (s: string) => s.startsWith('{') || s.startsWith(':');
  const words = segments.filter((s) => !isParam(s));
  const last = segments[segments.length - 1] ?? '';
  const m = method.toUpperCase();
  const crud: Record<string, string> = { GET: 'get', PUT: 'update', PATCH: 'update', DELETE: 'delete', POST: 'create' };

  if (isParam(last)) return camel([crud[m] ?? m.toLowerCase(), ...words.map(singular)]);
  const tail = words[words.length - 1];
  const before = segments[segments.length - 2];
  if (isPlural(tail)) {
    if (m === 'GET') return camel(['list', ...words.slice(0, -1).map(singular), tail]);
    return camel([crud[m] ?? m.toLowerCase(), ...words.map(singular)]);
  }
  if (before !== undefined && isParam(before) && m === 'POST') return camel([tail, ...words.slice(0, -1).map(singular)]);
  return camel([crud[m] ?? m.toLowerCase(), ...words.map(singular)]);
}

/** Plural English nouns of this API's paths (`customers`, `utilities`, `deliveries`); not `status`, `access`. */
function isPlural(word: string): boolean {
  const w = word.split('-').pop() ?? word;
  return /s$/.test(w) && !/(ss|us|is)$/.test(w);
}

function singular(word: string): string {
  const parts = word.split('-');
  const w = parts.pop()!;
  let one = w;
  if (isPlural(w)) {
    if (/ies$/.test(w)) one = w.slice(0, -3) + 'y';
    else if (/(ch|sh|x|ss)es$/.test(w)) one = w.slice(0, -2);
    else one = w.slice(0, -1);
  }
  return [...parts, one].join('-');
}

/** lowerCamelCase of path words (`payment-intents` → `paymentIntents`; `logo.svg` → `logoSvg`). */
function camel(words: string[]): string {
  const parts = words.flatMap((w) => w.split(/[^A-Za-z0-9]+/)).filter(Boolean);
  return parts.map((p, i) => (i === 0 ? p.charAt(0).toLowerCase() + p.slice(1) : p.charAt(0).toUpperCase() + p.slice(1))).join('');
}
