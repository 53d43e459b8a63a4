import assert from 'node:assert/strict';
import type { Company } from '../harness.ts';

/** Helpers shared by the cards and charges tests (not a test file itself). */

export const VISA_OK = '4242424242424242';
export const VISA_DECLINED = '4000000000000002';
export const VISA_EXPIRED = '4000000000000069';

/** A card valid for years, in the request shape of POST /cards. */
export function cardBody(customerId: string, overrides: Record<string, unknown> = {}) {
  return {
    card_number: VISA_OK,
    expiration_month: '12',
    expiration_year: String(new Date().getUTCFullYear() + 3),
    cvv: '123',
    holder_name: 'Ana Gómez',
    customer_id: customerId,
    authorization: true,
    ...overrides,
  };
}

export async function createCustomer(co: Company, env: 'test' | 'live' = 'test', name = 'Ana'): Promise<string> {
  const res = await co.req({ url: '/v1/customers', body: { first_name: name, last_name: 'Gómez', email: `${name.toLowerCase()}@example.com` }, env });
  assert.equal(res.status, 200, res.raw);
  return res.body.id;
}

export async function createCard(co: Company, customerId: string, overrides: Record<string, unknown> = {}, env: 'test' | 'live' = 'test') {
  const res = await co.req({ url: '/v1/cards', body: cardBody(customerId, overrides), env });
  assert.equal(res.status, 200, res.raw);
  return res.body as { id: string; brand: string; last4: string; [k: string]: any };
}
