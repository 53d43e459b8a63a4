import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { loadConfig } from '../../config.ts';
import { createLogger } from '../../runtime.ts';
import { createHarness, type Company, type Harness } from '../../../test/harness.ts';
import { chargeBody } from '../../../test/support/charges.ts';
import { cardBody, createCustomer } from '../../../test/support/cards.ts';

/**
 * PRODUCT.md: the full card number and the CVV are never stored or logged. After card operations
 * of every kind (saved, refused, tokenized, charged, refunded, replayed), every text and JSON
 * column of every table, and every log line the production logger wrote at the most verbose level,
 * are searched for the card numbers (in any spelling) and for security-code fields.
 */

const NUMBERS = ['4242424242424242', '4000000000000002', '5555555555554444', '378282246310005', '4242424242424241', '6011111111111117'];
const spellings = (pan: string) => [pan, pan.replace(/(\d{4})(?=\d)/g, '$1 '), pan.replace(/(\d{4})(?=\d)/g, '$1-')];
const SECURITY_CODE_FIELDS = /\b(cvv|ccv|cvc)\b/i;

describe('no card number or security code in the database or the logs', () => {
  let h: Harness;
  let co: Company;
  const lines: string[] = [];

  before(async () => {
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    // The production logger (its redaction), at the most verbose level.
    const logger = createLogger(loadConfig({ LOG_LEVEL: 'trace' }), 'recaudo', sink);
    h = await createHarness({ LOG_LEVEL: 'trace' }, { logger });
    co = await h.company('Sin Fugas SAS');
  });
  after(() => h.close());

  test('after card operations, a dump of every text column and the logs hold none', async () => {
    const customer = await createCustomer(co);
    const cards: string[] = [];
    // Saved cards, with each spelling and both code fields.
    for (const [i, pan] of NUMBERS.filter((n) => n !== '4242424242424241').entries()) {
      const amex = pan.startsWith('37');
      const res = await co.req({
        url: '/v1/cards',
        body: cardBody(customer, {
          card_number: spellings(pan)[i % 3],
          ...(i % 2 ? { cvv: undefined, ccv: amex ? '7319' : '907' } : { cvv: amex ? '7319' : '907' }),
        }),
      });
      assert.equal(res.status, 200, res.raw);
      cards.push(res.body.id);
    }
    // Refused cards: every coded error, a malformed body, a wrong type.
    await co.req({ url: '/v1/cards', body: cardBody(customer, { card_number: '4242424242424241' }) });
    await co.req({ url: '/v1/cards', body: cardBody(customer, { cvv: '9' }) });
    await co.req({ url: '/v1/cards', body: cardBody(customer, { expiration_year: 2001 }) });
    await co.req({ url: '/v1/cards', body: `{"card_number": "4242424242424242", "cvv": "907", ` });
    await co.req({ url: '/v1/cards', body: cardBody('not-a-customer') });
    await co.req({ url: '/v1/cards', body: cardBody(customer), key: co.publishable_keys.test });
    // Replays (the idempotency store) and tokens.
    await co.req({ url: '/v1/cards', body: cardBody(customer), idem: 'leak-replay' });
    await co.req({ url: '/v1/cards', body: cardBody(customer), idem: 'leak-replay' });
    const { customer_id: _c, authorization: _a, ...tokenData } = cardBody(customer);
    const token = await co.req({ url: '/v1/tokens', body: tokenData, key: co.publishable_keys.test });
    assert.equal(token.status, 200, token.raw);
    await co.req({ url: '/v1/tokens', body: { ...tokenData, cvv: 'x' }, key: co.publishable_keys.test });
    const tokenized = await co.req({ url: '/v1/cards/tokenized', body: { card_token: token.body.id, customer_id: customer, authorization: true } });
    assert.equal(tokenized.status, 200, tokenized.raw);
    // Charges on them: paid, declined, refunded; events and intents written.
    const paid = await co.req({ url: '/v1/charges', body: chargeBody(customer, { card_id: cards[0] }, { test_scenario: 'refundable' }) });
    assert.equal(paid.body.status, 'paid', paid.raw);
    assert.equal((await co.req({ url: '/v1/charges', body: chargeBody(customer, { card_id: cards[1] }) })).body.status, 'failed');
    assert.equal((await co.req({ url: `/v1/charges/${paid.body.id}/refund`, body: {} })).status, 200);
    await co.req({ url: `/v1/cards/${cards[2]}`, method: 'DELETE' });
    // A log call that carries card data by mistake is censored.
    h.runtime.deps.logger.info(
      { body: { card_number: NUMBERS[0], cvv: '907' }, card_number: NUMBERS[0], nested: { card: { card_number: NUMBERS[0], cvv: '907' } } },
      'careless log call',
    );

    // The dump: every text, varchar and json column of every table of the schema.
    const db = h.runtime.deps.database.db;
    const columns = await sql<{ table_name: string; column_name: string }>`
      SELECT table_name, column_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND data_type IN ('text', 'character varying', 'character', 'json', 'jsonb')
      ORDER BY table_name, ordinal_position`.execute(db);
    const byTable = new Map<string, string[]>();
    for (const c of columns.rows) byTable.set(c.table_name, [...(byTable.get(c.table_name) ?? []), c.column_name]);
    assert.ok(
      byTable.has('cards') && byTable.has('card_tokens') && byTable.has('idempotency_keys') && byTable.has('events'),
      'the dump covers the card tables, the idempotency store and the outbox',
    );
    let values = 0;
    for (const [table, cols] of byTable) {
      const rows = await sql<
        Record<string, string | null>
      >`SELECT ${sql.join(cols.map((c) => sql`${sql.ref(c)}::text`))} FROM ${sql.table(table)}`.execute(db);
      for (const row of rows.rows) {
        for (const [col, value] of Object.entries(row)) {
          if (value === null) continue;
          values++;
          for (const pan of NUMBERS) for (const s of spellings(pan)) assert.ok(!value.includes(s), `${table}.${col} holds a card number`);
          assert.ok(!SECURITY_CODE_FIELDS.test(value), `${table}.${col} holds a security code field: ${value.slice(0, 200)}`);
        }
      }
    }
    assert.ok(values > 100, `searched ${values} values`);

    // The logs.
    assert.ok(lines.length > 10, `the logger wrote ${lines.length} lines`);
    assert.ok(lines.some((l) => l.includes('careless log call') && l.includes('[redacted]')));
    for (const line of lines) {
      for (const pan of NUMBERS)
        for (const s of spellings(pan)) assert.ok(!line.includes(s), `a log line holds a card number: ${line.slice(0, 300)}`);
      assert.ok(!/"(cvv|ccv)":"(?!\[redacted\])/.test(line), `a log line holds a security code: ${line.slice(0, 300)}`);
    }
  });
});
