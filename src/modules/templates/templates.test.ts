import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, expectError, expectValidation, type Company, type Harness } from '../../../test/harness.ts';
import { TEMPLATE_CATALOGUE } from './catalogue.ts';

describe('templates', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness();
    co = await h.company();
  });
  after(() => h.close());

  const names = async (q = '') => {
    const res = await co.req({ url: `/v1/templates${q}` });
    assert.equal(res.status, 200, res.raw);
    return res.body.data.map((t: { name: string }) => t.name);
  };

  test('the seeded catalogue in the list envelope, sorted by name by default', async () => {
    const res = await co.req({ url: '/v1/templates' });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.total, TEMPLATE_CATALOGUE.length);
    assert.equal(res.body.path, 'http://recaudo.test/v1/templates');
    const t = res.body.data.find((x: { id: string }) => x.id === 'tpl_cobro_general');
    assert.deepEqual(Object.keys(t).sort(), [
      'body',
      'created_at',
      'id',
      'name',
      'predefined',
      'provider',
      'selectable',
      'stage',
      'status',
      'updated_at',
    ]);
    assert.equal(t.stage, 'payment_request');
    assert.equal(t.provider, 'whatsapp');
    assert.equal(t.selectable, true);
    assert.match(t.body, /\{\{payment_link\}\}/);
    assert.equal(t.created_at, '2025-01-15T14:00:00.000Z');
    const sorted = [...TEMPLATE_CATALOGUE.map((x) => x.name)].sort();
    assert.deepEqual(await names(), sorted);
    assert.deepEqual(await names('?sort=name'), sorted);
    assert.deepEqual(await names('?sort=-name'), [...sorted].reverse());
    const byCreated = [...TEMPLATE_CATALOGUE].sort((a, b) => a.created_at.localeCompare(b.created_at)).map((x) => x.name);
    assert.deepEqual(await names('?sort=created_at'), byCreated);
    assert.equal((await names('?sort=-updated_at'))[0], 'cobro_promocional');
    const live = await co.req({ url: '/v1/templates', env: 'live' });
    assert.equal(live.body.total, TEMPLATE_CATALOGUE.length, 'the same catalogue in both environments');
  });

  test('filters status, stage, provider, predefined, selectable', async () => {
    const expect = (pred: (t: (typeof TEMPLATE_CATALOGUE)[number]) => boolean) =>
      TEMPLATE_CATALOGUE.filter(pred)
        .map((t) => t.name)
        .sort();
    assert.deepEqual(
      await names('?filter[selectable]=true'),
      expect((t) => t.selectable),
    );
    assert.deepEqual(
      await names('?filter[selectable]=false'),
      expect((t) => !t.selectable),
    );
    assert.deepEqual(
      await names('?filter[predefined]=true'),
      expect((t) => t.predefined),
    );
    assert.deepEqual(
      await names('?filter[predefined]=false'),
      expect((t) => !t.predefined),
    );
    assert.deepEqual(
      await names('?filter[status]=pending'),
      expect((t) => t.status === 'pending'),
    );
    assert.deepEqual(await names('?filter[stage]=reminder'), ['recordatorio_pago']);
    assert.deepEqual(await names('?filter[provider]=email&filter[selectable]=true'), ['cobro_correo']);
    assert.deepEqual(await names('?filter[provider]=telegram'), []);
    assert.ok(
      TEMPLATE_CATALOGUE.every((t) => !t.selectable || (t.status === 'approved' && t.stage === 'payment_request')),
      'selectable: approved payment requests',
    );
  });

  test('predefined and selectable must be true or false (422); unknown filters and sorts are 400', async () => {
    for (const value of ['yes', '1', 'TRUE', '']) {
      expectValidation(await co.req({ url: `/v1/templates?filter[predefined]=${value}` }), 'filter[predefined]');
    }
    expectValidation(await co.req({ url: '/v1/templates?filter[selectable]=maybe' }), 'filter[selectable]');
    expectError(await co.req({ url: '/v1/templates?filter[name]=cobro_general' }), 400);
    expectError(await co.req({ url: '/v1/templates?sort=stage' }), 400);
    expectValidation(await co.req({ url: '/v1/templates?per_page=0' }), 'per_page');
  });
});
