import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { Receiver } from '../../../test/receiver.ts';
import { chargeBody, payer } from '../../../test/support/charges.ts';
import { createPayment } from '../../../test/support/payments.ts';
import { signBody } from '../webhooks/signature.ts';
import { allMatch, filterProblems, matches } from './filters.ts';
import { FLOW_MAX_ATTEMPTS, flowSink, RUN_JOB, runFlow } from './runner.ts';

/** Flows (docs/flows.md): configuration without x-idempotency, filters, call_url and send_message runs. */

describe('flow filters (pure)', () => {
  const data = { amount: 150000, status: 'paid', customer: { phone: '+573001112233', tags: ['vip'] }, remarks: null, label: '1500.50' };
  test('equality, lists, numeric comparisons (numbers or decimal strings), existence; all must hold', () => {
    assert.ok(matches({ path: 'status', op: 'eq', value: 'paid' }, data));
    assert.ok(!matches({ path: 'status', op: 'eq', value: 'PAID' }, data));
    assert.ok(matches({ path: 'status', op: 'ne', value: 'failed' }, data));
    assert.ok(matches({ path: 'customer.phone', op: 'in', value: ['+573001112233', '+573009999999'] }, data));
    assert.ok(matches({ path: 'status', op: 'nin', value: ['failed'] }, data));
    assert.ok(matches({ path: 'amount', op: 'gte', value: 150000 }, data));
    assert.ok(!matches({ path: 'amount', op: 'gt', value: 150000 }, data));
    assert.ok(matches({ path: 'label', op: 'lt', value: '1500.51' }, data));
    assert.ok(!matches({ path: 'status', op: 'gt', value: 1 }, data), 'a non-number never compares');
    assert.ok(matches({ path: 'remarks', op: 'eq', value: null }, data));
    assert.ok(matches({ path: 'missing.deep', op: 'eq', value: null }, data), 'absent equals null');
    assert.ok(matches({ path: 'customer.tags.0', op: 'eq', value: 'vip' }, data));
    assert.ok(matches({ path: 'customer', op: 'exists' }, data));
    assert.ok(matches({ path: 'remarks', op: 'exists', value: false }, data));
    assert.ok(!matches({ path: 'constructor', op: 'exists' }, data), 'only own properties');
    assert.ok(!matches({ path: '__proto__', op: 'exists' }, data));
    assert.ok(allMatch([], data));
    assert.ok(
      !allMatch(
        [
          { path: 'amount', op: 'gte', value: 1 },
          { path: 'status', op: 'eq', value: 'failed' },
        ],
        data,
      ),
    );
  });

  test('problems per filter', () => {
    assert.deepEqual(filterProblems({ path: 'a.b', op: 'eq', value: 'x' }, 0), {});
    assert.ok(filterProblems({ path: 'a..b', op: 'eq', value: 'x' }, 0)['filters.0.path']);
    assert.ok(filterProblems({ path: 'a', op: 'in', value: 'x' }, 1)['filters.1.value']);
    assert.ok(filterProblems({ path: 'a', op: 'gt', value: 'ten' }, 0)['filters.0.value']);
    assert.ok(filterProblems({ path: 'a', op: 'eq' }, 0)['filters.0.value']);
  });
});

describe('/v1/flows', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  let receiver: Receiver;
  const attempts = new Map<string, number>();

  before(async () => {
    h = await createHarness({ ALLOW_PRIVATE_WEBHOOKS: 'true' });
    // Far ahead of every other clock: on PostgreSQL the jobs table is shared with other test files'
    // worker processes, which would otherwise run this file's flow jobs before it looks at them.
    h.clock.advance(new Date('2028-02-01T12:00:00Z').getTime() - h.clock.now().getTime());
    co = await h.company('Flujos SAS');
    other = await h.company('Otra SAS');
    receiver = await new Receiver().start();
  });
  after(async () => {
    await receiver.close();
    await h.close();
  });

  /** Runs this company's due flow jobs as the queue would (a throw is a failed attempt, run again next time). */
  async function runJobs(company = co): Promise<number> {
    const db = h.runtime.deps.database.db;
    const jobs = await db
      .selectFrom('jobs')
      .select(['id', 'payload'])
      .where('kind', '=', RUN_JOB)
      .where(sql<string>`payload->>'company_id'`, '=', company.company.id)
      .where('run_at', '<=', h.clock.now())
      .orderBy('run_at')
      .execute();
    for (const job of jobs) {
      const n = (attempts.get(job.id) ?? 0) + 1;
      attempts.set(job.id, n);
      try {
        await runFlow(h.runtime.deps, job.payload, { attempts: n });
        await db.deleteFrom('jobs').where('id', '=', job.id).execute();
      } catch {
        /* the queue retries it */
      }
    }
    return jobs.length;
  }

  const runsOf = async (flowId: string, company = co) => (await company.req({ url: `/v1/flows/${flowId}/runs` })).body.data as any[];

  test('POST /flows needs no x-idempotency; the secret is shown once; get, list, another company’s flow is 404', async () => {
    const res = await co.req({
      url: '/v1/flows',
      idem: false,
      body: {
        name: 'Cobros grandes',
        event: 'charge.paid',
        filters: [{ path: 'amount', op: 'gte', value: 100000 }],
        action: { type: 'call_url', url: receiver.url },
      },
    });
    assert.equal(res.status, 200, res.raw);
    assert.match(res.body.id, /^flow_/);
    assert.match(res.body.secret, /^wh_tok_/);
    assert.deepEqual(res.body.action, { type: 'call_url', url: receiver.url });
    const got = await co.req({ url: `/v1/flows/${res.body.id}` });
    assert.equal(got.status, 200);
    assert.equal(got.body.secret, undefined);
    const list = await co.req({ url: '/v1/flows?filter[event]=charge.paid' });
    assert.ok(list.body.data.some((f: any) => f.id === res.body.id));
    expectError(await other.req({ url: `/v1/flows/${res.body.id}` }), 404, 'record_not_found');
    expectError(await co.req({ url: `/v1/flows/${res.body.id}`, env: 'live' }), 404, 'environment_key_mismatch');
    expectError(await co.req({ url: '/v1/flows/flow_nope' }), 404, 'record_not_found');
    // The same body again is a second flow (no idempotency on configuration).
    await co.req({ method: 'DELETE', url: `/v1/flows/${res.body.id}` });
  });

  test('invalid flows are 422 with every problem', async () => {
    const base = { name: 'x', event: 'charge.paid', action: { type: 'call_url', url: receiver.url } };
    expectValidation(await co.req({ url: '/v1/flows', idem: false, body: { ...base, event: 'charge.nope' } }), 'event');
    expectValidation(
      await co.req({
        url: '/v1/flows',
        idem: false,
        body: {
          ...base,
          filters: [
            { path: 'a..b', op: 'eq', value: 1 },
            { path: 'amount', op: 'gt', value: 'mucho' },
          ],
        },
      }),
      'filters.0.path',
      'filters.1.value',
    );
    expectValidation(await co.req({ url: '/v1/flows', idem: false, body: { ...base, action: { type: 'call_url', url: 'ftp://x' } } }), 'action.url');
    // Live keys: the webhook URL rules (https, public addresses).
    expectValidation(await co.req({ url: '/v1/flows', idem: false, env: 'live', body: base }), 'action.url');
    expectValidation(
      await co.req({ url: '/v1/flows', idem: false, env: 'live', body: { ...base, action: { type: 'call_url', url: 'https://127.0.0.1/hook' } } }),
      'action.url',
    );
    const msg = { type: 'send_message', template: 'cobro_general', to: '+573001112233', to_path: 'customer.phone' };
    expectValidation(await co.req({ url: '/v1/flows', idem: false, body: { ...base, action: msg } }), 'action.to');
    expectValidation(
      await co.req({ url: '/v1/flows', idem: false, body: { ...base, action: { ...msg, to_path: undefined, template: 'nope' } } }),
      'action.template',
    );
  });

  test('call_url: one signed POST per matching event, exactly once per (flow, event); retried until a 2xx; runs recorded', async () => {
    const created = await co.req({
      url: '/v1/flows',
      idem: false,
      body: {
        name: 'Grandes',
        event: 'charge.paid',
        filters: [{ path: 'amount', op: 'gte', value: 100000 }],
        action: { type: 'call_url', url: receiver.url },
      },
    });
    const flow = created.body;
    const p = await payer(h, co);
    const big = await co.req({ url: '/v1/charges', body: chargeBody(p.customer, { card_id: p.card }, { amount: 150000 }) });
    assert.equal(big.body.status, 'paid');
    const small = await co.req({ url: '/v1/charges', body: chargeBody(p.customer, { card_id: p.card }, { amount: 50000 }) });
    assert.equal(small.body.status, 'paid');
    let runs = await runsOf(flow.id);
    assert.equal(runs.length, 1, 'only the charge that passes the filter');
    assert.equal(runs[0].status, 'pending');

    // The receiver fails first: the run stays pending with the answer recorded.
    receiver.mode = { status: 500 };
    const before = receiver.received.length;
    await runJobs();
    runs = await runsOf(flow.id);
    assert.deepEqual([runs[0].status, runs[0].attempts, runs[0].last_status_code, runs[0].last_error], ['pending', 1, 500, 'HTTP 500']);
    receiver.mode = { status: 200 };
    await runJobs();
    runs = await runsOf(flow.id);
    assert.deepEqual([runs[0].status, runs[0].attempts, runs[0].last_status_code], ['succeeded', 2, 200]);
    assert.ok(runs[0].completed_at);

    const got = receiver.received.slice(before);
    assert.equal(got.length, 2);
    const last = got[1];
    const body = JSON.parse(last.raw.toString('utf8'));
    assert.equal(body.event, 'charge.paid');
    assert.equal(body.data.id, big.body.id);
    assert.equal(last.headers.signature, signBody(flow.secret, last.raw));
    assert.equal(last.headers['x-webhook-event'], 'charge.paid');
    assert.equal(last.headers['x-webhook-id'], body.id);
    assert.equal(last.headers['x-flow-id'], flow.id);
    assert.equal(last.headers['x-flow-run-id'], runs[0].id);
    assert.equal(runs[0].event_id, body.id);

    // The same event reaching the sink again (a redelivered emit) records no second run.
    const event = JSON.parse(last.raw.toString('utf8'));
    await h.runtime.deps.database.db.transaction().execute(async (trx) => {
      const scope = { companyId: co.company.id, environment: 'test' as const };
      const sink = flowSink(h.runtime.deps);
      const found = await trx.executeQuery(sink.subscribers(trx, scope, event.event).compile());
      await sink.deliver(trx, scope, event, h.clock.now(), found.rows);
    });
    assert.equal((await runsOf(flow.id)).length, 1);
    assert.equal(await runJobs(), 0);

    // filter[status] on runs; deleting the flow stops new runs.
    assert.equal((await co.req({ url: `/v1/flows/${flow.id}/runs?filter[status]=failed` })).body.total, 0);
    assert.equal((await co.req({ method: 'DELETE', url: `/v1/flows/${flow.id}` })).status, 204);
    await co.req({ url: '/v1/charges', body: chargeBody(p.customer, { card_id: p.card }, { amount: 200000 }) });
    assert.equal(await runJobs(), 0);
    expectError(await co.req({ url: `/v1/flows/${flow.id}` }), 404, 'record_not_found');
    const left = await h.runtime.deps.database.db.selectFrom('flow_runs').select('id').where('flow_id', '=', flow.id).execute();
    assert.equal(left.length, 1);
  });

  test(`call_url: a receiver that never answers 2xx fails the run after ${FLOW_MAX_ATTEMPTS} attempts`, async () => {
    const flow = (
      await co.req({
        url: '/v1/flows',
        idem: false,
        body: { name: 'Caída', event: 'payment.created', action: { type: 'call_url', url: receiver.url } },
      })
    ).body;
    receiver.mode = { status: 503 };
    await createPayment(co, { amount: 1000 });
    for (let i = 0; i < FLOW_MAX_ATTEMPTS; i++) await runJobs();
    const [run] = await runsOf(flow.id);
    assert.deepEqual([run.status, run.attempts, run.last_status_code], ['failed', FLOW_MAX_ATTEMPTS, 503]);
    assert.equal(await runJobs(), 0);
    receiver.mode = { status: 200 };
    await co.req({ method: 'DELETE', url: `/v1/flows/${flow.id}` });
  });

  test('send_message: the template filled from the event data, to a phone at a path, held to the contact hours', async () => {
    const sandbox = h.runtime.deps.rails.test.messaging;
    const flow = (
      await co.req({
        url: '/v1/flows',
        idem: false,
        body: {
          name: 'Aviso',
          event: 'payment.created',
          filters: [{ path: 'phone', op: 'exists' }],
          action: { type: 'send_message', template: 'cobro_general', to_path: 'phone', variables: { payer_name: 'title' } },
        },
      })
    ).body;
    assert.equal(flow.action.template_id, 'tpl_cobro_general');
    // Sunday 2028-02-13 10:00 Bogotá: no collection contact until Monday 07:00.
    h.clock.freeze();
    h.clock.advance(new Date('2028-02-13T15:00:00Z').getTime() - h.clock.now().getTime());
    const payment = await createPayment(co, { amount: 25000, title: 'Cuota', phone: '+573001234567' });
    await createPayment(co, { amount: 26000, title: 'Sin teléfono' }); // filtered out: no phone
    const sentBefore = sandbox.sent.length;
    await runJobs();
    let [run] = await runsOf(flow.id);
    assert.equal((await runsOf(flow.id)).length, 1);
    assert.equal(run.status, 'pending');
    assert.equal(run.next_attempt_at, '2028-02-14T12:00:00.000Z');
    assert.equal(sandbox.sent.length, sentBefore, 'nothing sent on a Sunday');
    h.clock.advance(new Date('2028-02-14T12:00:00Z').getTime() - h.clock.now().getTime());
    await runJobs();
    [run] = await runsOf(flow.id);
    assert.equal(run.status, 'succeeded');
    const sent = sandbox.sent.slice(sentBefore);
    assert.equal(sent.length, 1);
    assert.equal(sent[0].to, '+573001234567');
    assert.equal(sent[0].reference, run.id);
    assert.match(sent[0].text, /^Hola Cuota, Flujos SAS te envía un cobro por 25000: Cuota\. Paga aquí: /);
    assert.ok(sent[0].text.includes(payment.payment_link));
    h.clock.unfreeze();
  });
});
