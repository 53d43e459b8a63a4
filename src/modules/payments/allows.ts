import { z } from 'zod';
import { PAYMENT_METHODS, type PaymentMethod } from './tables.ts';

/**
 * `allows` as clients written for OnePay send it (docs/payments.md "allows"): besides our array of
 * method names, an object of booleans with OnePay's brand keys, e.g. the ticketing client's
 * `{cards: true, accounts: false, pse: true, breb: true}` → `["card", "banklink", "rtkey"]`.
 * Keys map to our methods (our own names are keys too); `true` enables, `false` or `null` does not;
 * unknown keys are ignored whatever their value; a known key with another value is 422 on
 * `allows.<key>`. The result is always the array (in the canonical method order), so responses
 * keep one shape.
 */
export const PAYMENT_BRAND_KEYS: Readonly<Record<string, readonly PaymentMethod[]>> = {
  cards: ['card'],
  card_extra: ['card'], // OnePay's extra card processing: still a card payment
  pse: ['banklink'],
  pse_debit: ['banklink'],
  accounts: ['banklink'], // paying from a bank account: our bank-transfer method
  breb: ['rtkey'],
  realtime: ['rtkey'],
  transfiya: ['rtkey'], // the instant-transfer network Bre-B succeeds: an instant-key payment
  nequi: ['walleta'],
  daviplata: ['walletb'],
  wallets: ['walleta', 'walletb'],
  // full_extra (a OnePay pricing option, not a method) and any other key: ignored.
};

/** The methods a connect link's page can enroll (a card, a bank account, a Nequi or Daviplata account). */
export const ENROLLABLE_METHODS = ['card', 'banklink', 'walleta', 'walletb'] as const satisfies readonly PaymentMethod[];
export type EnrollableMethod = (typeof ENROLLABLE_METHODS)[number];

/** Connect links: the same keys; instant-key ones (breb, realtime, transfiya) enroll nothing and are ignored. */
export const CONNECT_BRAND_KEYS: Readonly<Record<string, readonly EnrollableMethod[]>> = {
  cards: ['card'],
  card_extra: ['card'],
  pse: ['banklink'],
  pse_debit: ['banklink'],
  accounts: ['banklink'],
  nequi: ['walleta'],
  daviplata: ['walletb'],
  wallets: ['walleta', 'walletb'],
};

/** The methods an object of booleans enables, or the value unchanged (the array schema judges it). */
function fromBooleans<M extends string>(
  value: unknown,
  methods: readonly M[],
  brands: Readonly<Record<string, readonly M[]>>,
  problem: (key: string) => void,
): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const on = new Set<M>();
  for (const [key, flag] of Object.entries(value)) {
    const mapped = Object.hasOwn(brands, key) ? brands[key] : (methods as readonly string[]).includes(key) ? [key as M] : undefined;
    if (!mapped) continue;
    if (flag === true) for (const m of mapped) on.add(m);
    else if (flag !== false && flag !== null) problem(key);
  }
  return methods.filter((m) => on.has(m));
}

/** The `allows` field: an array of `methods` or OnePay's object of booleans, always parsed to the array. */
export function allowsField<M extends string>(methods: readonly [M, ...M[]], brands: Readonly<Record<string, readonly M[]>>, what: string) {
  const keys = Object.keys(brands).join(', ');
  return z.preprocess(
    (value, ctx) =>
      fromBooleans(value, methods, brands, (key) => ctx.addIssue({ code: 'custom', path: [key], message: 'must be true or false', input: value })),
    z
      .array(z.enum(methods))
      .min(1, 'must enable at least one payment method')
      .max(methods.length)
      .describe(
        `${what}: any of ${methods.join(', ')}; or OnePay's object of booleans with keys ${keys} (or ours), ` +
          'unknown keys ignored (docs/payments.md "allows"); answered as the array',
      ),
  );
}

export const paymentAllows = allowsField(PAYMENT_METHODS, PAYMENT_BRAND_KEYS, 'payment methods the link offers; default all');
