import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, ENGINE, eventually, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { expectScoped } from '../../../test/auth-matrix.ts';
import { Receiver } from '../../../test/receiver.ts';
import { bogotaDate, addDays } from './dates.ts';
import { allocateFolio, type AllocatedFolio } from './resolutions.ts';

const resolution = (over: Record<string, unknown> = {}) => ({
  number: '18764000001234',
  prefix: 'FE',
  document_type: 'invoice',
  from: 1,
  to: 1000,
  valid_from: '2024-01-01',
  valid_until: '2099-12-31',
  technical_key: 'abc123def456',
  ...over,
});

describe('fiscal resolutions', () => {
  let h: Harness;
  let co: Company;
  let other: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company();
    other = await h.company('Other SAS');
  });
  after(() => h.close());

  const scopeOf = (c: Company, environment: 'test' | 'live' = 'test') => ({ companyId: c.company.id, environment, deps: h.runtime.deps });
  const allocate = (c: Company, type: 'invoice' | 'credit_note' = 'invoice', at = h.clock.now(), environment: 'test' | 'live' = 'test') =>
    h.runtime.deps.database.db.transaction().execute((trx) => allocateFolio(trx, scopeOf(c, environment), type, at));

  test('the test environment starts with working resolutions; live with none', async () => {
    const c = await h.company('Fresh SAS');
    const list = await c.req({ url: '/v1/fiscal-resolutions?sort=created_at' });
    assert.equal(list.status, 200, list.raw);
    assert.equal(list.body.total, 2);
    const [inv, cn] = list.body.data;
    assert.deepEqual(
      {
        number: inv.number,
        prefix: inv.prefix,
        document_type: inv.document_type,
        from: inv.from,
        to: inv.to,
        valid_from: inv.valid_from,
        valid_until: inv.valid_until,
        technical_key: inv.technical_key,
        status: inv.status,
        next_folio: inv.next_folio,
        used: inv.used,
        remaining: inv.remaining,
        is_default: inv.is_default,
        is_test: inv.is_test,
      },
      {
        number: '18760000001',
        prefix: 'SETP',
        document_type: 'invoice',
        from: 990_000_000,
        to: 995_000_000,
        valid_from: '2019-01-19',
        valid_until: '2030-01-19',
        technical_key: 'fc8eac422eba16e22ffd8c6f94b3f40a6e38162c',
        status: 'active',
        next_folio: 990_000_000,
        used: 0,
        remaining: 5_000_001,
        is_default: true,
        is_test: true,
      },
    );
    assert.equal(cn.document_type, 'credit_note');
    assert.equal(cn.prefix, 'NC');
    assert.equal(cn.status, 'active');
    assert.match(inv.id, /^res_[0-9a-z]{26}$/);
    const again = await c.req({ url: '/v1/fiscal-resolutions' });
    assert.equal(again.body.total, 2, 'created once');
    const live = await c.req({ url: '/v1/fiscal-resolutions', env: 'live' });
    assert.equal(live.body.total, 0);
    assert.equal(await allocate(c, 'invoice', h.clock.now(), 'live'), null, 'live has no resolution by default');

    const first = await allocate(c);
    assert.deepEqual(
      { folio: first?.folio, number: first?.number, resolutionId: first?.resolutionId },
      { folio: 990_000_000, number: 'SETP990000000', resolutionId: inv.id },
    );
    assert.deepEqual(first?.resolution, {
      number: '18760000001',
      prefix: 'SETP',
      from: 990_000_000,
      to: 995_000_000,
      validFrom: '2019-01-19',
      validUntil: '2030-01-19',
      technicalKey: 'fc8eac422eba16e22ffd8c6f94b3f40a6e38162c',
    });
    const note = await allocate(c, 'credit_note');
    assert.equal(note?.number, 'NC1');
    const got = await c.req({ url: `/v1/fiscal-resolutions/${inv.id}` });
    assert.deepEqual([got.body.next_folio, got.body.used, got.body.remaining], [990_000_001, 1, 5_000_000]);
    // Outside the validity dates nothing is allocated.
    assert.equal(await allocate(c, 'invoice', new Date('2030-01-20T05:00:00Z')), null);
    assert.equal((await allocate(c, 'invoice', new Date('2030-01-20T04:59:59Z')))?.folio, 990_000_001, 'valid_until is a Bogotá date');
  });

  test('create (draft), validation', async () => {
    const res = await co.req({ url: '/v1/fiscal-resolutions', body: resolution() });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.status, 'draft');
    assert.deepEqual([res.body.from, res.body.to, res.body.next_folio, res.body.used, res.body.remaining], [1, 1000, 1, 0, 1000]);
    assert.equal(res.body.is_default, false);
    const noPrefix = await co.req({
      url: '/v1/fiscal-resolutions',
      body: resolution({ prefix: null, document_type: 'credit_note', technical_key: null }),
    });
    assert.equal(noPrefix.status, 200, noPrefix.raw);
    assert.equal(noPrefix.body.prefix, '');
    assert.equal(noPrefix.body.technical_key, null);

    expectValidation(await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ from: 10, to: 9 }) }), 'to');
    expectValidation(await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ from: 0 }) }), 'from');
    expectValidation(await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ from: '1' }) }), 'from');
    expectValidation(await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ to: 1.5 }) }), 'to');
    expectValidation(
      await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ valid_from: '2025-01-02', valid_until: '2025-01-01' }) }),
      'valid_until',
    );
    expectValidation(await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ valid_until: '2025-02-30' }) }), 'valid_until');
    expectValidation(await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ valid_from: '01/01/2025' }) }), 'valid_from');
    expectValidation(await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ prefix: 'fe' }) }), 'prefix');
    expectValidation(await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ prefix: 'ABCDE' }) }), 'prefix');
    expectValidation(await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ prefix: 'F-1' }) }), 'prefix');
    expectValidation(await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ technical_key: undefined }) }), 'technical_key');
    expectValidation(await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ document_type: 'debit_note' }) }), 'document_type');
    expectValidation(await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ number: undefined }) }), 'number');
    expectError(await co.req({ url: '/v1/fiscal-resolutions', body: resolution(), idem: false }), 409, 'idempotency_error', 10003);
  });

  test('activate; one active per prefix and document type; expired; without folios', async () => {
    const a = (await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ prefix: 'AC', from: 1, to: 3 }) })).body;
    const b = (await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ prefix: 'AC', from: 1, to: 5, number: '2' }) })).body;
    const actA = await co.req({ url: `/v1/fiscal-resolutions/${a.id}/activate`, idem: 'act-a', body: undefined, method: 'POST' });
    assert.equal(actA.status, 200, actA.raw);
    assert.equal(actA.body.status, 'active');
    assert.ok(actA.body.activated_at);
    const again = await co.req({ method: 'POST', url: `/v1/fiscal-resolutions/${a.id}/activate` });
    assert.equal(again.body.status, 'active', 'activating the active resolution answers it');
    // AC is the most recently activated invoice resolution: it numbers the next invoices.
    assert.equal((await allocate(co))?.number, 'AC1');
    assert.equal((await allocate(co))?.number, 'AC2');

    const actB = await co.req({ method: 'POST', url: `/v1/fiscal-resolutions/${b.id}/activate`, body: {} });
    assert.equal(actB.status, 200, actB.raw);
    assert.equal(actB.body.status, 'active');
    assert.equal(actB.body.next_folio, 3, 'numbering continues after the folios the prefix already issued');
    const retired = (await co.req({ url: `/v1/fiscal-resolutions/${a.id}` })).body;
    assert.equal(retired.status, 'retired');
    assert.ok(retired.retired_at);
    assert.equal((await allocate(co))?.number, 'AC3');
    const active = await co.req({ url: '/v1/fiscal-resolutions?filter[status]=active&filter[prefix]=AC' });
    assert.deepEqual(
      active.body.data.map((r: { id: string }) => r.id),
      [b.id],
    );

    // A resolution whose folios the prefix already used up cannot be activated.
    const c = (await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ prefix: 'AC', from: 1, to: 3, number: '3' }) })).body;
    const exhausted = await co.req({ method: 'POST', url: `/v1/fiscal-resolutions/${c.id}/activate` });
    expectError(exhausted, 422, 'resolution_not_activatable', 'resolution_not_activatable');
    assert.equal((await co.req({ url: `/v1/fiscal-resolutions/${c.id}` })).body.status, 'draft');
    assert.equal((await co.req({ url: `/v1/fiscal-resolutions/${b.id}` })).body.status, 'active', 'a refused activation changes nothing');

    const today = bogotaDate(h.clock.now());
    const expired = (
      await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ prefix: 'EX', valid_from: '2020-01-01', valid_until: addDays(today, -1) }) })
    ).body;
    expectError(
      await co.req({ method: 'POST', url: `/v1/fiscal-resolutions/${expired.id}/activate` }),
      422,
      'resolution_not_activatable',
      'resolution_not_activatable',
    );
    const lastDay = (
      await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ prefix: 'LD', valid_from: '2020-01-01', valid_until: today }) })
    ).body;
    assert.equal(
      (await co.req({ method: 'POST', url: `/v1/fiscal-resolutions/${lastDay.id}/activate` })).body.status,
      'active',
      'valid through its last day',
    );

    // Exhausting the active range: allocation answers null (stamping reports resolution_not_activatable).
    const tiny = (
      await co.req({
        url: '/v1/fiscal-resolutions',
        body: resolution({ prefix: 'CN', document_type: 'credit_note', technical_key: null, from: 7, to: 7 }),
      })
    ).body;
    await co.req({ method: 'POST', url: `/v1/fiscal-resolutions/${tiny.id}/activate` });
    assert.equal((await allocate(co, 'credit_note'))?.number, 'CN7');
    const next = await allocate(co, 'credit_note');
    assert.equal(next?.number.startsWith('NC'), true, 'falls back to the other active credit-note resolution');
    const tinyAfter = (await co.req({ url: `/v1/fiscal-resolutions/${tiny.id}` })).body;
    assert.deepEqual([tinyAfter.next_folio, tinyAfter.used, tinyAfter.remaining], [null, 1, 0]);
  });

  test('list filters, 404s and scoping', async () => {
    const r = (await co.req({ url: '/v1/fiscal-resolutions', body: resolution({ prefix: 'LS' }) })).body;
    const drafts = await co.req({ url: '/v1/fiscal-resolutions?filter[status]=draft&filter[prefix]=LS' });
    assert.deepEqual(
      drafts.body.data.map((x: { id: string }) => x.id),
      [r.id],
    );
    const notes = await co.req({ url: '/v1/fiscal-resolutions?filter[document_type]=credit_note' });
    assert.ok(notes.body.data.every((x: { document_type: string }) => x.document_type === 'credit_note'));
    expectValidation(await co.req({ url: '/v1/fiscal-resolutions?filter[status]=bogus' }), 'filter[status]');
    expectValidation(await co.req({ url: '/v1/fiscal-resolutions?filter[document_type]=bogus' }), 'filter[document_type]');
    expectError(await co.req({ url: '/v1/fiscal-resolutions?filter[number]=1' }), 400);
    expectError(await co.req({ url: '/v1/fiscal-resolutions/res_nope' }), 404, 'record_not_found', 10002);
    expectError(
      await co.req({ method: 'POST', url: '/v1/fiscal-resolutions/res_0000000000aaaaaaaaaaaaaaaa/activate' }),
      404,
      'record_not_found',
      10002,
    );
    await expectScoped(co, other, { url: `/v1/fiscal-resolutions/${r.id}` });
    await expectScoped(co, other, { method: 'POST', url: `/v1/fiscal-resolutions/${r.id}/activate` });
    assert.equal((await co.req({ url: `/v1/fiscal-resolutions/${r.id}` })).body.status, 'draft', 'foreign activations changed nothing');
  });

  test('a rolled-back allocation consumes nothing', async () => {
    const c = await h.company('Rollback SAS');
    assert.equal((await allocate(c))?.folio, 990_000_000);
    let inside: AllocatedFolio | null = null;
    await assert.rejects(
      h.runtime.deps.database.db.transaction().execute(async (trx) => {
        inside = await allocateFolio(trx, scopeOf(c), 'invoice', h.clock.now());
        throw new Error('caller failed');
      }),
      /caller failed/,
    );
    assert.equal((inside as AllocatedFolio | null)?.folio, 990_000_001);
    assert.equal((await allocate(c))?.folio, 990_000_001, 'the rolled-back folio is handed out again: no gap');
  });

  test(`100 concurrent allocations are contiguous, without gap or duplicate (${ENGINE})`, async () => {
    const c = await h.company('Concurrent SAS');
    await allocate(c); // creates the default resolutions first, like any earlier use
    const results = await Promise.all(Array.from({ length: 100 }, () => allocate(c)));
    const folios = results.map((r) => r!.folio).sort((x, y) => x - y);
    assert.equal(new Set(folios).size, 100, 'no duplicate');
    assert.deepEqual(
      folios,
      Array.from({ length: 100 }, (_, i) => 990_000_001 + i),
      'contiguous, no gap',
    );
    // And concurrent first uses of a fresh company create the defaults once.
    const d = await h.company('First use SAS');
    const first = await Promise.all(Array.from({ length: 10 }, () => allocate(d)));
    assert.deepEqual(
      first.map((r) => r!.folio).sort((x, y) => x - y),
      Array.from({ length: 10 }, (_, i) => 990_000_000 + i),
    );
    const list = await d.req({ url: '/v1/fiscal-resolutions' });
    assert.equal(list.body.total, 2);
  });

  describe('alerts', () => {
    let receiver: Receiver;
    before(async () => {
      receiver = await new Receiver().start();
    });
    after(() => receiver.close());

    const alertsOf = (from: number) =>
      receiver.received.slice(from).map((r) => JSON.parse(r.raw.toString('utf8')) as { event: string; data: Record<string, unknown> });

    test('80 % and 95 % of the range, once each, delivered by webhook', async () => {
      const c = await h.company('Alerts SAS');
      const hook = await c.req({
        url: '/v1/webhooks',
        body: { name: 'fiscal', url: receiver.url, events: ['fiscal_resolution.range_alert', 'fiscal_resolution.expiring'] },
      });
      assert.equal(hook.status, 200, hook.raw);
      const r = (await c.req({ url: '/v1/fiscal-resolutions', body: resolution({ prefix: 'AL', from: 101, to: 120 }) })).body;
      await c.req({ method: 'POST', url: `/v1/fiscal-resolutions/${r.id}/activate` });
      const start = receiver.received.length;
      for (let i = 0; i < 15; i++) await allocate(c);
      assert.equal(await h.deliverWebhooks(), 0, 'nothing below 80 %');
      await allocate(c); // 16 of 20 = 80 %
      await h.deliverWebhooks();
      await receiver.waitFor(start + 1);
      for (let i = 0; i < 4; i++) await allocate(c); // 20 of 20: 95 % crossed at 19
      await h.deliverWebhooks();
      await receiver.waitFor(start + 2);
      const alerts = alertsOf(start);
      assert.deepEqual(
        alerts.map((a) => [a.event, a.data.threshold_percent, a.data.id]),
        [
          ['fiscal_resolution.range_alert', 80, r.id],
          ['fiscal_resolution.range_alert', 95, r.id],
        ],
      );
      assert.equal(alerts[1].data.remaining, 1, '95 % is crossed at folio 19 of 20');
      assert.equal((await allocate(c))?.number.startsWith('SETP'), true, 'AL exhausted: the default SETP range takes over');
      await h.deliverWebhooks();
      assert.equal(receiver.received.length, start + 2, 'each alert once');
    });

    test('30 days before valid_until, by the scheduled job, once', async () => {
      const c = await h.company('Expiry SAS');
      const hook = await c.req({ url: '/v1/webhooks', body: { name: 'fiscal', url: receiver.url, events: ['fiscal_resolution.expiring'] } });
      assert.equal(hook.status, 200, hook.raw);
      const today = bogotaDate(h.clock.now());
      const r = (
        await c.req({ url: '/v1/fiscal-resolutions', body: resolution({ prefix: 'XP', valid_from: '2024-01-01', valid_until: addDays(today, 32) }) })
      ).body;
      await c.req({ method: 'POST', url: `/v1/fiscal-resolutions/${r.id}/activate` });
      const start = receiver.received.length;
      await h.runtime.deps.jobs.tick();
      assert.equal(await h.deliverWebhooks(), 0, 'not yet due');
      h.clock.advance(3 * 86_400_000);
      await eventually(async () => {
        await h.runtime.deps.jobs.tick();
        return (await h.deliverWebhooks()) > 0;
      });
      await receiver.waitFor(start + 1);
      const [alert] = alertsOf(start);
      assert.equal(alert.event, 'fiscal_resolution.expiring');
      assert.equal(alert.data.id, r.id);
      assert.ok((alert.data.days_until_expiry as number) <= 30);
      // Allocation after the alert does not repeat it.
      await allocate(c);
      await h.runtime.deps.jobs.tick();
      assert.equal(await h.deliverWebhooks(), 0);
    });
  });
});
