import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { createHarness, type Company, type Harness } from '../../../test/harness.ts';
import { createCustomer } from '../../../test/support/cards.ts';
import { ApiError } from '../../platform/errors/api-error.ts';
import { auditLedger, holdPayout, recordCollection, releaseHold, type LedgerScope } from '../ledger/service.ts';
import { recordWalletReturn, recordWalletWithdrawal, type WalletScope } from './service.ts';

/**
 * Property test of customer wallets (docs/wallets.md): random sequences of company collections,
 * deposits through the API (often more than the balance holds, often to cents), and cash-out
 * style withdrawals from a wallet (the ledger hold plus recordWalletWithdrawal) and their returns,
 * over three customers. After every operation: the API's figures are the model's, no balance is
 * below zero, money is never created (the company's available and held money plus every wallet is
 * what was collected), each wallet's listed movements add up to its balance, and the ledger audits
 * clean.
 */

const RUNS = Number(process.env.PROPERTY_RUNS ?? 25);
const CUSTOMERS = 3;

type Op =
  | { kind: 'fund'; cents: bigint }
  | { kind: 'deposit'; c: number; cents: bigint }
  | { kind: 'withdraw'; c: number; cents: bigint }
  | { kind: 'return'; pick: number };

const cents = fc.oneof(fc.bigInt({ min: 1n, max: 99n }), fc.bigInt({ min: 1n, max: 3_000_000n }));
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('fund' as const), cents }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('deposit' as const), c: fc.nat(CUSTOMERS - 1), cents }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('withdraw' as const), c: fc.nat(CUSTOMERS - 1), cents }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('return' as const), pick: fc.nat() }) },
);

const pesos = (minor: bigint) => `${minor / 100n}.${(minor % 100n).toString().padStart(2, '0')}`;

describe('customer wallets (property)', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  test('random deposits, withdrawals and returns never create money nor take a balance below zero', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 15 }), async (ops) => {
        const co: Company = await h.company('Propiedad Billetera SAS');
        const scope: LedgerScope & WalletScope = { companyId: co.company.id, environment: 'test', deps: h.runtime.deps };
        const customers: string[] = [];
        for (let i = 0; i < CUSTOMERS; i++) customers.push(await createCustomer(co, 'test', `Cliente${i}`));
        const db = h.runtime.deps.database.db;
        const model = { collected: 0n, available: 0n, held: 0n, wallets: customers.map(() => 0n) };
        const open: { cashoutId: string; c: number; cents: bigint }[] = [];

        for (const [i, o] of ops.entries()) {
          const label = `${i}: ${JSON.stringify(o, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))}`;
          switch (o.kind) {
            case 'fund':
              await db
                .transaction()
                .execute((trx) => recordCollection(trx, scope, { currency: 'COP', amount: o.cents, source: { type: 'prop', id: randomUUID() } }));
              model.collected += o.cents;
              model.available += o.cents;
              break;
            case 'deposit': {
              const res = await co.req({
                url: `/v1/customers/${customers[o.c]}/transactions`,
                body: { amount: pesos(o.cents), concept: label.slice(0, 200) },
              });
              if (o.cents <= model.available) {
                assert.equal(res.status, 200, `${label}: ${res.raw}`);
                assert.equal(Math.round(res.body.amount * 100), Number(o.cents));
                model.available -= o.cents;
                model.wallets[o.c] += o.cents;
              } else {
                assert.equal(res.status, 422, `${label}: ${res.raw}`);
                assert.equal(res.body.code, 10501);
              }
              break;
            }
            case 'withdraw': {
              const cashoutId = `co_prop_${randomUUID()}`;
              const ok = o.cents <= model.wallets[o.c];
              try {
                await db.transaction().execute(async (trx) => {
                  await holdPayout(trx, scope, {
                    currency: 'COP',
                    amount: o.cents,
                    source: { type: 'cashout', id: cashoutId },
                    from: { kind: 'customer_wallet', holder: customers[o.c] },
                  });
                  await recordWalletWithdrawal(trx, scope, { customerId: customers[o.c], amount: o.cents, currency: 'COP', cashoutId });
                });
                assert.ok(ok, `${label}: expected insufficient_balance`);
                model.wallets[o.c] -= o.cents;
                model.held += o.cents;
                open.push({ cashoutId, c: o.c, cents: o.cents });
              } catch (error) {
                if (ok || !(error instanceof ApiError) || error.def.codeName !== 'insufficient_balance') throw error;
              }
              break;
            }
            case 'return': {
              if (!open.length) break;
              const [w] = open.splice(o.pick % open.length, 1);
              await db.transaction().execute(async (trx) => {
                await releaseHold(trx, scope, {
                  currency: 'COP',
                  amount: w.cents,
                  source: { type: 'cashout', id: w.cashoutId },
                  to: { kind: 'customer_wallet', holder: customers[w.c] },
                });
                await recordWalletReturn(trx, scope, { cashoutId: w.cashoutId });
              });
              model.held -= w.cents;
              model.wallets[w.c] += w.cents;
              break;
            }
          }

          // The API agrees with the model; nothing negative; nothing created.
          const balances = await co.req({ url: '/v1/balances' });
          const cop = balances.body.data.find((b: { currency: string }) => b.currency === 'COP');
          assert.equal(Math.round(cop.available * 100), Number(model.available), label);
          assert.equal(Math.round(cop.held * 100), Number(model.held), label);
          let inWallets = 0n;
          for (const [c, id] of customers.entries()) {
            const wallet = await co.req({ url: `/v1/customers/${id}/balance` });
            assert.equal(wallet.status, 200, wallet.raw);
            assert.equal(Math.round(wallet.body.balance * 100), Number(model.wallets[c]), `${label}: wallet ${c}`);
            assert.ok(wallet.body.balance >= 0);
            inWallets += BigInt(Math.round(wallet.body.balance * 100));
          }
          assert.ok(model.available >= 0n && model.held >= 0n);
          assert.equal(
            BigInt(Math.round(cop.available * 100)) + BigInt(Math.round(cop.held * 100)) + inWallets,
            model.collected,
            `${label}: money is conserved`,
          );
        }

        // Each wallet's movements add up to its balance.
        for (const [c, id] of customers.entries()) {
          const list = await co.req({ url: `/v1/customers/${id}/transactions?per_page=100` });
          assert.equal(list.status, 200, list.raw);
          const sum = list.body.data.reduce(
            (s: bigint, t: { type: string; amount: number }) => s + (t.type === 'withdrawal' ? -1n : 1n) * BigInt(Math.round(t.amount * 100)),
            0n,
          );
          assert.equal(sum, model.wallets[c], `the movements of wallet ${c} add up to its balance`);
        }
        assert.deepEqual(await auditLedger(db, [co.company.id]), { unbalanced: [], mismatched: [], negative: [] });
      }),
      { numRuns: RUNS },
    );
  });
});
