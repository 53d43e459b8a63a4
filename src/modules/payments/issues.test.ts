import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, type Company, type Harness } from '../../../test/harness.ts';
import { createPayment, paymentEvents, scopeOf } from '../../../test/support/payments.ts';
import { startIntent } from './intents.ts';
import { settleAttemptFromProvider } from './provider-attempts.ts';

/**
 * payment.issue: a rail (a connector's event or poll, through settleAttemptFromProvider) approves
 * an attempt Recaudo already closed as declined. The rail's side is called as a connector does.
 */
describe('payment.issue', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company('Incidencias SAS');
  });
  after(() => h.close());

  const attempt = async () => {
    const payment = await createPayment(co, { amount: 40000 });
    const intent = await startIntent(scopeOf(h, co), payment.id, { method: 'card' });
    return { payment, intent };
  };
  const scope = () => ({ companyId: co.company.id, environment: 'test' as const });

  test('a late approval of a declined attempt raises payment.issue once; the payment is left as it is', async () => {
    const { payment, intent } = await attempt();
    // The provider had no record of it for an hour: the attempt ended TIMEOUT.
    assert.equal(await settleAttemptFromProvider(h.runtime.deps, scope(), intent.id, { status: 'declined', remarks: 'TIMEOUT' }), 'declined');
    assert.equal(await settleAttemptFromProvider(h.runtime.deps, scope(), intent.id, { status: 'approved' }), null);
    // The provider says it again (its event and the poll): one issue.
    assert.equal(await settleAttemptFromProvider(h.runtime.deps, scope(), intent.id, { status: 'approved' }), null);
    const events = await paymentEvents(h, co, payment.id);
    const issues = events.filter((e) => e.type === 'payment.issue');
    assert.equal(issues.length, 1);
    const data = issues[0].data;
    assert.equal(data.id, payment.id);
    assert.equal(data.status, 'declined');
    assert.equal(data.issue.code, 'late_approval');
    assert.equal(data.issue.intent_id, intent.id);
    assert.equal(data.issue.amount, 40000);
    assert.match(data.issue.id, /^pis_/);
    assert.match(data.issue.message, /approved attempt .* after it was recorded as declined \(TIMEOUT\)/);
    assert.equal((await co.req({ url: `/v1/payments/${payment.id}` })).body.status, 'declined', 'nothing changed by itself');
    // Nothing was collected for it.
    const balances = (await co.req({ url: '/v1/balances' })).body.data.find((b: { currency: string }) => b.currency === 'COP');
    assert.equal(balances.available, 0);
  });

  test('an ordinary approval, or a repeated decline, raises nothing', async () => {
    const { payment, intent } = await attempt();
    assert.equal(await settleAttemptFromProvider(h.runtime.deps, scope(), intent.id, { status: 'approved' }), 'approved');
    assert.equal(await settleAttemptFromProvider(h.runtime.deps, scope(), intent.id, { status: 'approved' }), 'approved');
    const other = await attempt();
    await settleAttemptFromProvider(h.runtime.deps, scope(), other.intent.id, { status: 'declined', remarks: 'fondos insuficientes' });
    await settleAttemptFromProvider(h.runtime.deps, scope(), other.intent.id, { status: 'declined', remarks: 'fondos insuficientes' });
    for (const id of [payment.id, other.payment.id]) {
      assert.deepEqual(
        (await paymentEvents(h, co, id)).filter((e) => e.type === 'payment.issue'),
        [],
      );
    }
  });
});
