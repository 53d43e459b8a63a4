import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, type Company, type Harness } from '../../test/harness.ts';
import { getPage, postForm, tokenOf, type PageRes } from '../../test/support/pages.ts';
import { bankId } from '../modules/banks/catalogue.ts';

/** The connect link's page (docs/pages.md "Connect-link page") over HTTP; the browser test is connect-pages.browser.test.ts. */

const BANCOLOMBIA = bankId('1007');
const NEQUI = bankId('1507');
const FUTURE_YEAR = String(new Date().getUTCFullYear() + 3);
const CARD = {
  card_number: '4242 4242 4242 4242',
  exp_month: '12',
  exp_year: FUTURE_YEAR,
  cvv: '123',
  holder_name: 'Ana María Pérez',
  acepto_tarjeta: 'si',
};

describe('connect-link page', () => {
  let h: Harness;
  let co: Company;

  const customer = async (c: Company = co, env: 'test' | 'live' = 'test') => {
    const res = await c.req({ url: '/v1/customers', body: { first_name: 'Ana', last_name: 'Gómez' }, env });
    assert.equal(res.status, 200, res.raw);
    return res.body.id as string;
  };
  const link = async (body: Record<string, unknown> = {}, c: Company = co, env: 'test' | 'live' = 'test') => {
    const customer_id = (body.customer_id as string | undefined) ?? (await customer(c, env));
    const res = await c.req({ url: '/v1/connect-links', body: { customer_id, single_use: true, ...body }, env });
    assert.equal(res.status, 200, res.raw);
    const path = new URL(res.body.url).pathname;
    return { ...res.body, path } as { id: string; path: string; customer_id: string; url: string; [k: string]: unknown };
  };
  /** A fresh form token of the link's page (each a second apart, so two pages have two tokens). */
  const formToken = async (path: string) => {
    h.clock.advance(1000);
    const page = await getPage(h, path);
    assert.equal(page.status, 200, page.body.slice(0, 400));
    return tokenOf(page.body);
  };
  const accountsOf = async (customerId: string) => (await co.req({ url: `/v1/customers/${customerId}/accounts` })).body.data as any[];
  const cardsOf = async (customerId: string) => (await co.req({ url: `/v1/customers/${customerId}/cards` })).body.data as any[];
  const eventsOf = async (type: string, c: Company = co) =>
    (
      await h.runtime.deps.database.db
        .selectFrom('events')
        .select(['type', 'data'])
        .where('company_id', '=', c.company.id)
        .where('type', '=', type)
        .orderBy('created_at')
        .execute()
    ).map((e) => e.data as any);
  const settleEnrollments = async () => {
    h.clock.advance(1000);
    await h.runtime.deps.jobs.tick();
  };
  const bankForm = (token: string, extra: Record<string, string> = {}) => ({
    token,
    bank: BANCOLOMBIA,
    account_type: 'SAVINGS',
    account_number: '123-456789-01',
    acepto_cuenta: 'si',
    ...extra,
  });
  const errorsShown = (res: PageRes, ...texts: RegExp[]) => {
    assert.equal(res.status, 422, res.body.slice(0, 600));
    for (const t of texts) assert.match(res.body, t);
    assert.match(res.body, /data-error-summary/);
  };

  before(async () => {
    h = await createHarness();
    co = await h.company('Energía del Valle SAS');
  });
  after(() => h.close());

  test('the link opens the page: company, the three ways, test data; unknown links are a Spanish 404', async () => {
    const l = await link();
    assert.match(l.path, /^\/connect\/[A-Za-z0-9]{32}$/);
    const page = await getPage(h, l.path);
    assert.equal(page.status, 200);
    assert.match(page.body, /lang="es-CO"/);
    assert.match(page.body, /Energía del Valle SAS/);
    assert.match(page.body, /Inscribe tu medio de pago/);
    assert.match(page.body, /Cuenta bancaria/);
    assert.match(page.body, /Tarjeta de crédito o débito/);
    assert.match(page.body, /Nequi o Daviplata/);
    assert.match(page.body, /Modo de prueba/);
    assert.match(page.body, /<option value="[^"]+">Bancolombia<\/option>/);
    const bankList = /<select id="bank"[\s\S]*?<\/select>/.exec(page.body)![0];
    assert.doesNotMatch(bankList, /Nequi|Daviplata|Citibank/, 'wallets and banks closed to debits are not in the bank list');
    assert.match(/<select id="wallet_bank"[\s\S]*?<\/select>/.exec(page.body)![0], /Nequi[\s\S]*Daviplata|Daviplata[\s\S]*Nequi/);
    assert.equal(page.headers['cache-control'], 'no-store');
    assert.equal(page.headers['x-frame-options'], 'DENY');
    for (const path of ['/connect/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', '/connect/nope', `${l.path}x`]) {
      const missing = await getPage(h, path);
      assert.equal(missing.status, 404, path);
      assert.match(missing.body, /No encontramos este enlace/);
    }
  });

  test('bank account: every form error, then enrolled as POST /accounts would (PENDING → ACTIVE), the link used, redirect with the ids', async () => {
    const l = await link({ redirect_url: 'https://tienda.example.co/listo?origen=enlace' });
    const token = await formToken(l.path);
    const url = `${l.path}/cuenta`;

    errorsShown(
      await postForm(h, url, { token, bank: '00000000-0000-4000-8000-000000000000', account_type: 'X', account_number: '', acepto_cuenta: '' }),
      /Elige tu banco de la lista/,
      /Elige si la cuenta es de ahorros o corriente/,
      /Escribe el número de la cuenta/,
      /Marca la casilla para autorizar/,
    );
    errorsShown(await postForm(h, url, bankForm(token, { bank: NEQUI })), /Elige tu banco de la lista/);
    // The accounts module's own rules: 4 to 20 digits.
    const short = await postForm(h, url, bankForm(token, { account_number: '12' }));
    errorsShown(short, /debe tener de 4 a 20 dígitos/);
    assert.match(short.body, /value="12"/, 'the values are shown back');
    errorsShown(await postForm(h, url, bankForm(token, { acepto_cuenta: '' })), /Marca la casilla para autorizar los débitos/);
    assert.equal((await accountsOf(l.customer_id)).length, 0, 'nothing was created by a refused form');

    const otherTab = await formToken(l.path);
    const done = await postForm(h, url, bankForm(token));
    assert.equal(done.status, 303, done.body.slice(0, 400));
    const target = new URL(done.location!);
    assert.equal(`${target.origin}${target.pathname}`, 'https://tienda.example.co/listo');
    assert.equal(target.searchParams.get('origen'), 'enlace');
    assert.equal(target.searchParams.get('connect_link_id'), l.id);
    const accountId = target.searchParams.get('account_id')!;
    assert.equal(target.searchParams.get('card_id'), null);

    const accounts = await accountsOf(l.customer_id);
    assert.equal(accounts.length, 1);
    assert.equal(accounts[0].id, accountId);
    assert.deepEqual(
      [accounts[0].status, accounts[0].subtype, accounts[0].authorization, accounts[0].bank_id, accounts[0].account_number],
      ['PENDING', 'SAVINGS', true, BANCOLOMBIA, '****8901'],
    );
    assert.equal((await co.req({ url: `/v1/connect-links/${l.id}` })).body.status, 'used');
    const completed = (await eventsOf('connect_link.completed')).filter((e) => e.id === l.id);
    assert.equal(completed.length, 1);
    assert.equal(completed[0].status, 'used');
    assert.equal(completed[0].customer_id, l.customer_id);
    assert.equal(completed[0].account.id, accountId);
    assert.equal(completed[0].account.status, 'PENDING');
    assert.equal(completed[0].card, null);
    assert.equal((await eventsOf('account.pending')).filter((e) => e.id === accountId).length, 1);

    await settleEnrollments();
    assert.equal((await co.req({ url: `/v1/accounts/${accountId}` })).body.status, 'ACTIVE', 'the sandbox bank connects it');
    assert.equal((await eventsOf('account.connected')).filter((e) => e.id === accountId).length, 1);

    // The same form again (a double tap, a reload): the same answer, nothing new.
    const again = await postForm(h, url, bankForm(token));
    assert.equal(again.status, 303);
    assert.equal(again.location, done.location);
    assert.equal((await accountsOf(l.customer_id)).length, 1);

    // Used up: the page says so, and a new form is refused the same way.
    const used = await getPage(h, l.path);
    assert.equal(used.status, 410);
    assert.match(used.body, /Este enlace ya se usó/);
    assert.match(used.body, /Energía del Valle SAS/);
    const late = await postForm(h, `${l.path}/tarjeta`, { ...CARD, token: otherTab });
    assert.equal(late.status, 410, 'a page opened before the link was used');
    assert.match(late.body, /Este enlace ya se usó/);
    assert.equal((await cardsOf(l.customer_id)).length, 0);
  });

  test('a rejected bank account (number ending 9999) still completes the link; the bank rejects it afterwards', async () => {
    const l = await link({ single_use: false });
    const done = await postForm(h, `${l.path}/cuenta`, bankForm(await formToken(l.path), { account_number: '4000009999', account_type: 'CHECKING' }));
    assert.equal(done.status, 200, done.body.slice(0, 400));
    assert.match(done.body, /Quedó inscrita/);
    assert.match(done.body, /Tu banco confirmará la inscripción/);
    assert.match(done.body, /Inscribir otro medio de pago/, 'a reusable link offers another');
    await settleEnrollments();
    const [account] = await accountsOf(l.customer_id);
    assert.equal(account.status, 'REJECTED');
    assert.equal((await co.req({ url: `/v1/connect-links/${l.id}` })).body.status, 'active', 'a reusable link stays active');
  });

  test('card: readable errors for 10104, 10102, 10122; the number is never kept; saved with authorization on a reusable link', async () => {
    const l = await link({ single_use: false });
    const token = await formToken(l.path);
    const url = `${l.path}/tarjeta`;
    errorsShown(
      await postForm(h, url, { token, card_number: '', exp_month: '', exp_year: '', cvv: '', holder_name: '', acepto_tarjeta: '' }),
      /Escribe el número de la tarjeta/,
      /Escribe el código de seguridad/,
      /Escribe el nombre como aparece/,
      /Marca la casilla para autorizar los cobros/,
    );
    const badNumber = await postForm(h, url, { ...CARD, token, card_number: '4242 4242 4242 4241' });
    errorsShown(badNumber, /El número de la tarjeta no es válido/);
    assert.doesNotMatch(badNumber.body, /4242 4242 4242 4241|4242424242424241/, 'the number is never shown back');
    assert.match(badNumber.body, /value="Ana María Pérez"/);
    errorsShown(await postForm(h, url, { ...CARD, token, cvv: '12' }), /El código de seguridad debe tener 3 dígitos/);
    errorsShown(await postForm(h, url, { ...CARD, token, exp_year: '2020' }), /La tarjeta está vencida/);
    errorsShown(await postForm(h, url, { ...CARD, token, exp_month: '13' }), /mes de vencimiento, de 01 a 12/);
    assert.equal((await cardsOf(l.customer_id)).length, 0);

    const done = await postForm(h, url, { ...CARD, token });
    assert.equal(done.status, 200, done.body.slice(0, 400));
    assert.match(done.body, /tu tarjeta Visa terminada en 4242/);
    const cards = await cardsOf(l.customer_id);
    assert.equal(cards.length, 1);
    assert.deepEqual([cards[0].brand, cards[0].last4, cards[0].authorization, cards[0].holder_name], ['visa', '4242', true, 'Ana María Pérez']);
    const completed = (await eventsOf('connect_link.completed')).filter((e) => e.id === l.id);
    assert.equal(completed.length, 1);
    assert.equal(completed[0].card.id, cards[0].id);
    assert.equal(completed[0].account, null);
    assert.equal(completed[0].status, 'active');

    // A second card through the same reusable link, from a new page.
    assert.equal((await postForm(h, url, { ...CARD, token: await formToken(l.path), card_number: '5555 5555 5555 4444' })).status, 200);
    assert.equal((await cardsOf(l.customer_id)).length, 2);

    const db = h.runtime.deps.database.db;
    for (const table of ['cards', 'card_tokens', 'events', 'connect_link_enrollments'] as const) {
      const rows = await db.selectFrom(table).selectAll().where('company_id', '=', co.company.id).execute();
      const text = JSON.stringify(rows, (_k, v) => (typeof v === 'bigint' ? String(v) : v));
      assert.doesNotMatch(text, /4242424242424242|5555555555554444/, `no card number in ${table}`);
    }
  });

  test('wallet account: Nequi, then its code (a wrong one is a form error), then ACTIVE and back to the company', async () => {
    const l = await link({ redirect_url: 'https://tienda.example.co/listo' });
    const token = await formToken(l.path);
    const url = `${l.path}/billetera`;
    errorsShown(
      await postForm(h, url, { token, wallet_bank: BANCOLOMBIA, wallet_phone: '12', acepto_billetera: '' }),
      /Elige Nequi o Daviplata/,
      /celular de Colombia de 10 dígitos/,
      /Marca la casilla para autorizar los débitos a esta billetera/,
    );
    const started = await postForm(h, url, { token, wallet_bank: NEQUI, wallet_phone: '300 123 4567', acepto_billetera: 'si' });
    assert.equal(started.status, 303, started.body.slice(0, 400));
    const [account] = await accountsOf(l.customer_id);
    assert.equal(started.location, `${l.path}/codigo/${account.id}`);
    assert.deepEqual(
      [account.subtype, account.status, account.bank_id, account.account_number],
      ['ELECTRONIC_DEPOSIT', 'PENDING', NEQUI, '****4567'],
    );
    assert.equal((await eventsOf('connect_link.completed')).filter((e) => e.id === l.id).length, 1);

    await settleEnrollments();
    const code = await getPage(h, started.location!);
    assert.equal(code.status, 200);
    assert.match(code.body, /Confirma tu Nequi/);
    assert.match(code.body, /\*\*\*\*4567/);
    // The payer leaves and opens the link again: it takes them back to the code.
    const reopened = await getPage(h, l.path);
    assert.equal(reopened.status, 303);
    assert.equal(reopened.location, started.location);

    const codeToken = tokenOf(code.body);
    assert.equal((await postForm(h, started.location!, { token: 'x.y', otp: '123456' })).status, 403);
    errorsShown(await postForm(h, started.location!, { token: codeToken, otp: '12' }), /Escribe los 6 dígitos del código/);
    errorsShown(await postForm(h, started.location!, { token: codeToken, otp: '654321' }), /El código no es correcto/);
    assert.equal((await co.req({ url: `/v1/accounts/${account.id}` })).body.status, 'PENDING');

    const ok = await postForm(h, started.location!, { token: codeToken, otp: '123456' });
    assert.equal(ok.status, 303, ok.body.slice(0, 400));
    const target = new URL(ok.location!);
    assert.equal(target.searchParams.get('connect_link_id'), l.id);
    assert.equal(target.searchParams.get('account_id'), account.id);
    assert.equal((await co.req({ url: `/v1/accounts/${account.id}` })).body.status, 'ACTIVE');
    assert.equal((await eventsOf('account.validated')).filter((e) => e.id === account.id).length, 1);
    // Sent again: where it stands (ACTIVE), the same redirect, no second validation.
    const again = await postForm(h, started.location!, { token: codeToken, otp: '123456' });
    assert.equal(again.location, ok.location);
    assert.equal((await eventsOf('account.validated')).filter((e) => e.id === account.id).length, 1);
    assert.equal((await getPage(h, l.path)).status, 410, 'done: the used link says so');
    // Another link's code page does not reach this account.
    const other = await link();
    assert.equal((await getPage(h, `${other.path}/codigo/${account.id}`)).status, 404);
  });

  test('wallet code: five wrong codes lock the step (429), even the right one after them and five sent at once; the account stays PENDING', async () => {
    const l = await link();
    const token = await formToken(l.path);
    const started = await postForm(h, `${l.path}/billetera`, { token, wallet_bank: NEQUI, wallet_phone: '300 765 4321', acepto_billetera: 'si' });
    assert.equal(started.status, 303, started.body.slice(0, 400));
    const [account] = await accountsOf(l.customer_id);
    await settleEnrollments();
    const codeToken = tokenOf((await getPage(h, started.location!)).body);
    // A malformed code is a form error, not an attempt.
    errorsShown(await postForm(h, started.location!, { token: codeToken, otp: 'abc' }), /Escribe los 6 dígitos/);
    for (const left of ['Te quedan 4 intentos', 'Te quedan 3 intentos', 'Te quedan 2 intentos', 'Te queda 1 intento']) {
      errorsShown(await postForm(h, started.location!, { token: codeToken, otp: '654321' }), new RegExp(left));
    }
    const fifth = await postForm(h, started.location!, { token: codeToken, otp: '111111' });
    assert.equal(fifth.status, 429);
    assert.match(fifth.body, /Demasiados intentos/);
    const right = await postForm(h, started.location!, { token: codeToken, otp: '123456' });
    assert.equal(right.status, 429, 'the right code no longer opens it');
    const shown = await getPage(h, started.location!);
    assert.equal(shown.status, 200);
    assert.match(shown.body, /Pide a .* un enlace nuevo/);
    assert.doesNotMatch(shown.body, /name="otp"/, 'no code field any more');
    assert.equal((await co.req({ url: `/v1/accounts/${account.id}` })).body.status, 'PENDING');

    // Five at once on a fresh step: never more attempts than the limit, whatever the timing.
    const l2 = await link();
    const started2 = await postForm(h, `${l2.path}/billetera`, {
      token: await formToken(l2.path),
      wallet_bank: NEQUI,
      wallet_phone: '300 765 4322',
      acepto_billetera: 'si',
    });
    await settleEnrollments();
    const token2 = tokenOf((await getPage(h, started2.location!)).body);
    const burst = await Promise.all(Array.from({ length: 8 }, () => postForm(h, started2.location!, { token: token2, otp: '654321' })));
    const statuses = burst.map((r) => r.status);
    // Wrong codes answer 422 until the step locks; a wrong one whose page is drawn after the fifth
    // attempt was taken already shows the lock (429). Never more than five were tried.
    assert.ok(
      statuses.every((s) => s === 422 || s === 429),
      String(statuses),
    );
    assert.ok(statuses.filter((s) => s === 422).length <= 4, String(statuses));
    assert.ok(statuses.filter((s) => s === 429).length >= 4, String(statuses));
    const [account2] = await accountsOf(l2.customer_id);
    const attempts = await h.runtime.deps.database.db
      .selectFrom('connect_link_enrollments')
      .select('code_attempts')
      .where('account_id', '=', account2.id)
      .executeTakeFirstOrThrow();
    assert.equal(attempts.code_attempts, 5, 'exactly five attempts taken by eight codes sent at once');
  });

  test('single use under a race: two forms sent at once enroll one resource, the other gets the used page', async () => {
    for (const kinds of [
      ['cuenta', 'cuenta'],
      ['tarjeta', 'cuenta'],
    ] as const) {
      const l = await link();
      const tokens = [await formToken(l.path), await formToken(l.path)];
      assert.notEqual(tokens[0], tokens[1]);
      const results = await Promise.all(
        kinds.map((kind, i) =>
          kind === 'cuenta' ? postForm(h, `${l.path}/cuenta`, bankForm(tokens[i])) : postForm(h, `${l.path}/tarjeta`, { ...CARD, token: tokens[i] }),
        ),
      );
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, 410], 'one wins (the success page: no redirect_url), one gets the used page');
      assert.match(results.find((r) => r.status === 200)!.body, /Quedó inscrita/);
      assert.match(results.find((r) => r.status === 410)!.body, /Este enlace ya se usó/);
      const enrolled = (await accountsOf(l.customer_id)).length + (await cardsOf(l.customer_id)).length;
      assert.equal(enrolled, 1, `${kinds.join('+')}: one resource`);
      assert.equal((await eventsOf('connect_link.completed')).filter((e) => e.id === l.id).length, 1);
    }
  });

  test('deleted links, forged and foreign form tokens', async () => {
    const l = await link({ single_use: false });
    const token = await formToken(l.path);
    const other = await link();
    const foreign = await formToken(other.path);
    for (const bad of ['', 'x.y', foreign]) {
      const res = await postForm(h, `${l.path}/cuenta`, bankForm(bad));
      assert.equal(res.status, 403, bad);
      assert.match(res.body, /El formulario venció/);
    }
    assert.equal((await co.req({ method: 'DELETE', url: `/v1/connect-links/${l.id}` })).status, 204);
    const page = await getPage(h, l.path);
    assert.equal(page.status, 410);
    assert.match(page.body, /Este enlace ya no está disponible/);
    const late = await postForm(h, `${l.path}/cuenta`, bankForm(token));
    assert.equal(late.status, 410);
    assert.equal((await accountsOf(l.customer_id)).length, 0);
    assert.equal((await postForm(h, '/connect/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/cuenta', bankForm(token))).status, 404);
  });

  test('live without an enrollment connector: no account forms, and a sent one is the coded refusal as a page', async () => {
    const l = await link({}, co, 'live');
    const page = await getPage(h, l.path);
    assert.equal(page.status, 200);
    assert.doesNotMatch(page.body, /Modo de prueba/);
    assert.doesNotMatch(page.body, /id="form-cuenta"/);
    assert.match(page.body, /id="form-tarjeta"/);
    const res = await postForm(h, `${l.path}/cuenta`, bankForm(tokenOf(page.body)));
    assert.equal(res.status, 422);
    assert.match(res.body, /Esta inscripción no está disponible/);
    assert.match(res.body, /No se guardó nada/);
    const accounts = (await co.req({ url: `/v1/customers/${l.customer_id}/accounts`, env: 'live' })).body.data;
    assert.equal(accounts.length, 0);
    assert.equal((await co.req({ url: `/v1/connect-links/${l.id}`, env: 'live' })).body.status, 'active');
  });
});
