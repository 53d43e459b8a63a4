import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, type Company, type Harness } from '../../test/harness.ts';
import { getPage, postForm, tokenOf } from '../../test/support/pages.ts';

/** The plan page (docs/subscriptions.md "Plan page") over HTTP; the browser test is in pages.browser.test.ts. */
describe('plan page', () => {
  let h: Harness;
  let co: Company;
  let plan: { id: string; link: string };

  before(async () => {
    h = await createHarness();
    co = await h.company('Gimnasio Central');
    const res = await co.req({
      url: '/v1/plans',
      body: { name: 'Plan Oro', amount_in_cents: 8_990_000, cicle_frequency: 'monthly', trial: { has_trial: true, trial_days: 7 } },
    });
    assert.equal(res.status, 200, res.raw);
    plan = res.body;
  });
  after(() => h.close());

  test('the link shows the plan and its form; unknown plans are 404', async () => {
    assert.equal(new URL(plan.link).pathname, `/plan/${plan.id}`);
    const page = await getPage(h, `/plan/${plan.id}`);
    assert.equal(page.status, 200);
    assert.match(page.body, /Plan Oro/);
    assert.match(page.body, /\$ 89\.900 cada mes, hasta que canceles, con 7 días de prueba sin costo/);
    assert.match(page.body, /Gimnasio Central/);
    assert.match(page.body, /Modo de prueba/);
    assert.equal(page.headers['cache-control'], 'no-store');
    assert.equal((await getPage(h, '/plan/plan_00000000000000000000000000')).status, 404);
  });

  test('a forged token is refused; missing data answers the form with the errors; a valid form subscribes once', async () => {
    assert.equal((await postForm(h, `/plan/${plan.id}`, { token: 'x.y', first_name: 'Ana', phone: '3001234567', acepto: 'si' })).status, 403);
    const token = tokenOf((await getPage(h, `/plan/${plan.id}`)).body);
    const bad = await postForm(h, `/plan/${plan.id}`, { token, first_name: '', phone: '12', acepto: '' });
    assert.equal(bad.status, 422);
    assert.match(bad.body, /Escribe tu nombre/);
    assert.match(bad.body, /celular de Colombia/);
    assert.match(bad.body, /Marca la casilla/);
    const fields = { token, first_name: 'Ana', last_name: 'Gómez', phone: '300 123 4567', email: '', acepto: 'si' };
    const done = await postForm(h, `/plan/${plan.id}`, fields);
    assert.equal(done.status, 200, done.body.slice(0, 500));
    assert.match(done.body, /Quedaste suscrito/);
    const again = await postForm(h, `/plan/${plan.id}`, fields);
    assert.equal(again.status, 200);
    const subs = (await co.req({ url: `/v1/subscriptions?filter[plan_id]=${plan.id}` })).body.data;
    assert.equal(subs.length, 1, 'the form sent twice subscribes once');
    assert.deepEqual([subs[0].status, subs[0].payment_mode, subs[0].trial.trial_days], ['active', 'request', 7]);
    assert.match(again.body, new RegExp(subs[0].id));
    const customer = (await co.req({ url: `/v1/customers/${subs[0].customer_id}` })).body;
    assert.deepEqual([customer.first_name, customer.phone, customer.metadata], ['Ana', '+573001234567', { source: 'plan_page' }]);
  });
});
