import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, type Company, type Harness } from '../../test/harness.ts';
import { installFakeLiveConnector } from '../../test/fakes/live-connectors.ts';
import { runDueExpirations } from '../../test/support/payments.ts';
import { FormTokens } from './csrf.ts';
import { crc16, emvcoPayload } from './qr.ts';
import { checkCard, luhnValid, normalisePhone, parsePesosInput } from './sandbox.ts';
import { DECLINES_PER_HOUR } from './routes.ts';
import {
  columnsContaining,
  createPayment,
  getPage,
  goodCard,
  intentsOf,
  pageToken,
  paymentStatus,
  postForm,
  tokenOf,
} from '../../test/support/pages.ts';

const PAN = '4242424242424242';
const SECRET = 'pages-test-secret';

describe('payer pages over HTTP', () => {
  let h: Harness;
  let co: Company;
  before(async () => {
    h = await createHarness({ PAGES_SECRET: SECRET });
    co = await h.company('Acme Telecomunicaciones SAS');
  });
  after(() => h.close());
  /** A form token as the pages sign it (for pages that show no form). */
  const formToken = (id: string) => new FormTokens(SECRET).issue(id, h.clock.now());

  test('unknown payments and paths are a Spanish HTML 404', async () => {
    for (const url of [
      '/pay/pay_01m800jmks947bdw72bbhg5694',
      '/pay/not-an-id',
      '/pay/pay_01m800jmks947bdw72bbhg5694/attempts/pi_x',
      '/pay/x/y/z',
      '/portal/nada',
    ]) {
      const res = await getPage(h, url);
      assert.equal(res.status, 404, url);
      assert.match(String(res.headers['content-type']), /^text\/html/);
      assert.match(res.body, /lang="es-CO"/);
      assert.match(res.body, /No encontramos este cobro/);
    }
    const post = await postForm(h, '/pay/pay_01m800jmks947bdw72bbhg5694/card', { token: 'x' });
    assert.equal(post.status, 404);
  });

  test('the payment page: company, title, description, COP amount, due date, only the allowed methods, safe headers', async () => {
    const expires = new Date(h.clock.now().getTime() + 3 * 86_400_000);
    const p = await createPayment(co, {
      reference: 'FAC-2025-0012',
      allows: ['card', 'walleta'],
      expires_at: expires.toISOString(),
      description: 'Plan <hogar> & más',
    });
    assert.equal(new URL(p.payment_link).pathname, `/pay/${p.id}`);
    const res = await getPage(h, `/pay/${p.id}`);
    assert.equal(res.status, 200);
    assert.match(res.body, /<html lang="es-CO">/);
    assert.match(res.body, /Acme Telecomunicaciones SAS/);
    assert.match(res.body, /<h1 id="titulo">Factura de marzo<\/h1>/);
    assert.match(res.body, /Plan &lt;hogar&gt; &amp; más/, 'company text is escaped');
    assert.match(res.body, /\$ 150\.000/);
    assert.match(res.body, /FAC-2025-0012/);
    assert.match(res.body, /Paga antes de/);
    assert.match(res.body, /Tarjeta de crédito o débito/);
    assert.match(res.body, /Billetera A/);
    assert.doesNotMatch(res.body, /Billetera B|Transferencia bancaria<\/summary>|Llave o código QR/);
    assert.match(res.body, /<label for="card_number">/);
    assert.match(res.body, /aria-live="polite"/);
    assert.match(res.body, /Modo de prueba/);
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.equal(res.headers['x-frame-options'], 'DENY');
    const csp = String(res.headers['content-security-policy']);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.match(csp, /script-src 'nonce-/);
    assert.doesNotMatch(res.body, /style="/, 'no inline style attributes (the CSP would block them)');
  });

  test('the JSON API keeps refusing form bodies (415); the form parser lives only in the pages', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/payments',
      headers: { authorization: `Bearer ${co.keys.test}`, 'x-idempotency': 'form-415', 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'title=Factura&amount=150000',
    });
    assert.equal(res.statusCode, 415, res.body);
    assert.equal(JSON.parse(res.body).code_name, 'unsupported_media_type');
  });

  test('final states: paid, paid externally, cancelled, expired (by the job and before it runs), refunded', async () => {
    const paid = await createPayment(co, { redirect_url: 'https://comercio.example/gracias' });
    assert.equal((await co.req({ url: `/v1/payments/${paid.id}/resolve`, body: { action: 'approve' } })).status, 200);
    let res = await getPage(h, `/pay/${paid.id}`);
    assert.equal(res.status, 200);
    assert.match(res.body, /Pago recibido/);
    assert.match(res.body, /href="https:\/\/comercio\.example\/gracias">Volver al comercio/);
    assert.doesNotMatch(res.body, /card_number/);

    const external = await createPayment(co);
    assert.equal((await co.req({ method: 'PUT', url: `/v1/payments/${external.id}`, body: { status: 'paid_externally' } })).status, 200);
    res = await getPage(h, `/pay/${external.id}`);
    assert.match(res.body, /Pago recibido/);
    assert.match(res.body, /registró este cobro como pagado/);

    const cancelled = await createPayment(co);
    assert.equal((await co.req({ method: 'DELETE', url: `/v1/payments/${cancelled.id}` })).status, 200);
    res = await getPage(h, `/pay/${cancelled.id}`);
    assert.match(res.body, /Este cobro fue cancelado/);
    assert.doesNotMatch(res.body, /<form/);

    const soon = new Date(h.clock.now().getTime() + 3_600_000).toISOString();
    const byJob = await createPayment(co, { expires_at: soon });
    const beforeJob = await createPayment(co, { expires_at: soon });
    const token = await pageToken(h, beforeJob.id);
    h.clock.advance(2 * 3_600_000);
    await runDueExpirations(h, [byJob.id]);
    assert.equal((await paymentStatus(co, byJob.id)).status, 'expired');
    res = await getPage(h, `/pay/${byJob.id}`);
    assert.match(res.body, /Este enlace de pago venció/);
    // Past its expiry, the job not run yet: the page already says so and refuses to charge.
    res = await getPage(h, `/pay/${beforeJob.id}`);
    assert.match(res.body, /Este enlace de pago venció/);
    const post = await postForm(h, `/pay/${beforeJob.id}/card`, { token, ...goodCard });
    assert.equal(post.status, 303);
    assert.equal(post.location, `/pay/${beforeJob.id}`);
    assert.equal((await intentsOf(co, beforeJob.id)).length, 0);

    const refunded = await createPayment(co);
    await co.req({ url: `/v1/payments/${refunded.id}/resolve`, body: { action: 'approve' } });
    await h.runtime.deps.database.db.updateTable('payments').set({ status: 'refunded' }).where('id', '=', refunded.id).execute();
    res = await getPage(h, `/pay/${refunded.id}`);
    assert.match(res.body, /Pago reembolsado/);
  });

  test('CSRF: a POST without a valid token for this payment is refused (403) and charges nothing', async () => {
    const p = await createPayment(co);
    const other = await createPayment(co);
    const otherToken = await pageToken(h, other.id);
    const tokens = new FormTokens('another secret');
    const cases: Record<string, string>[] = [
      { ...goodCard },
      { ...goodCard, token: '' },
      { ...goodCard, token: otherToken },
      { ...goodCard, token: tokens.issue(p.id, h.clock.now()) },
      { ...goodCard, token: `${otherToken.split('.')[0]}.AAAA` },
    ];
    for (const fields of cases) {
      const res = await postForm(h, `/pay/${p.id}/card`, fields);
      assert.equal(res.status, 403, JSON.stringify(fields.token));
      assert.match(res.body, /Esta página de pago ya no es válida/);
    }
    // A token older than a day is refused too.
    const old = await pageToken(h, p.id);
    h.clock.advance(25 * 3_600_000);
    assert.equal((await postForm(h, `/pay/${p.id}/card`, { ...goodCard, token: old })).status, 403);
    for (const path of ['walleta', 'banklink', 'rtkey']) assert.equal((await postForm(h, `/pay/${p.id}/${path}`, { token: otherToken })).status, 403);
    assert.equal((await intentsOf(co, p.id)).length, 0);
    assert.equal((await paymentStatus(co, p.id)).status, 'pending');
  });

  test('card validation errors (Luhn, expiry, CVV, name) re-render the form in Spanish, never echo the number, charge nothing', async () => {
    const p = await createPayment(co);
    const token = await pageToken(h, p.id);
    const bad = { token, card_number: '4242 4242 4242 4241', exp_month: '13', exp_year: '2030', cvv: '12', holder_name: 'A' };
    let res = await postForm(h, `/pay/${p.id}/card`, bad);
    assert.equal(res.status, 422);
    assert.match(res.body, /El número de la tarjeta no es válido/);
    assert.match(res.body, /Elige el mes de vencimiento/);
    assert.match(res.body, /El código de seguridad tiene 3 dígitos/);
    assert.match(res.body, /Escribe el nombre como aparece en la tarjeta/);
    assert.match(res.body, /id="card_number"[^>]*aria-invalid="true"/);
    assert.match(res.body, /<a href="#card_number">/, 'an error summary links to the field');
    assert.doesNotMatch(res.body, /4242 4242 4242 4241|4242424242424241/);

    res = await postForm(h, `/pay/${p.id}/card`, { ...goodCard, token, exp_month: '01', exp_year: '2020', cvv: '999' });
    assert.equal(res.status, 422);
    assert.match(res.body, /La tarjeta está vencida/);
    assert.doesNotMatch(res.body, /value="999"/, 'the CVV is not echoed');
    assert.match(res.body, /value="2020"/, 'the expiry is echoed');

    assert.equal((await intentsOf(co, p.id)).length, 0);

    // A valid number outside the sandbox table approves, as it does through POST /v1/charges (one table).
    res = await postForm(h, `/pay/${p.id}/card`, { ...goodCard, token, card_number: '5555555555554444' });
    assert.equal(res.status, 303);
    assert.equal((await paymentStatus(co, p.id)).status, 'approved');
  });

  test('the approving card pays the payment (303 to redirect_url with payment_id); the card number is stored nowhere', async () => {
    const p = await createPayment(co, { redirect_url: 'https://comercio.example/gracias?pedido=7' });
    const token = await pageToken(h, p.id);
    const res = await postForm(h, `/pay/${p.id}/card`, { ...goodCard, token });
    assert.equal(res.status, 303);
    assert.equal(res.location, `https://comercio.example/gracias?pedido=7&payment_id=${p.id}`);
    const got = await paymentStatus(co, p.id);
    assert.equal(got.status, 'approved');
    assert.equal(got.amount_paid, 150000);
    const [intent] = await intentsOf(co, p.id);
    assert.equal(intent.method, 'card');
    assert.equal(intent.status, 'approved');
    assert.deepEqual(await columnsContaining(h, co.company.id, PAN), [], 'the full card number is in no text column');
    assert.deepEqual(await columnsContaining(h, co.company.id, '4242 4242'), []);
    // The CSP lets the form's redirect reach the merchant's origin.
    const again = await getPage(h, `/pay/${p.id}`);
    assert.match(again.body, /Pago recibido/);

    const noRedirect = await createPayment(co);
    const r2 = await postForm(h, `/pay/${noRedirect.id}/card`, { ...goodCard, token: await pageToken(h, noRedirect.id) });
    assert.equal(r2.status, 303);
    assert.match(r2.location!, new RegExp(`^/pay/${noRedirect.id}\\?intento=pi_`));
    const shown = await getPage(h, r2.location!);
    assert.match(shown.body, /Pago recibido/);
    assert.match(shown.body, /Tarjeta de crédito o débito/);
  });

  test('declining cards show the reason and the payment stays payable', async () => {
    const p = await createPayment(co, { allows: ['card', 'rtkey'] });
    const csp = String((await getPage(h, `/pay/${p.id}`)).headers['content-security-policy']);
    assert.match(csp, /form-action 'self';/);
    let res = await postForm(h, `/pay/${p.id}/card`, { ...goodCard, card_number: '4000000000000002', token: await pageToken(h, p.id) });
    assert.equal(res.status, 303);
    let page = await getPage(h, res.location!);
    assert.match(page.body, /role="alert" id="resultado-rechazo"/);
    assert.match(page.body, /Tu pago no fue aprobado/);
    assert.match(page.body, /La entidad financiera rechazó la transacción/);
    assert.match(page.body, /id="form-card"/, 'the card form is offered again');
    assert.equal((await paymentStatus(co, p.id)).status, 'declined');

    res = await postForm(h, `/pay/${p.id}/card`, { ...goodCard, card_number: '4000000000000069', token: tokenOf(page.body) });
    page = await getPage(h, res.location!);
    assert.match(page.body, /La tarjeta está vencida según el banco emisor/);
    const intents = await intentsOf(co, p.id);
    assert.deepEqual(intents.map((i) => i.remarks).sort(), ['CARD_EXPIRED', 'TRANSACTION_REJECTED']);

    // Coming back later: the last decline is mentioned, and paying works.
    page = await getPage(h, `/pay/${p.id}`);
    assert.match(page.body, /El último intento de pago fue rechazado/);
    res = await postForm(h, `/pay/${p.id}/card`, { ...goodCard, token: tokenOf(page.body) });
    assert.equal((await paymentStatus(co, p.id)).status, 'approved');
  });

  test("the payment's test_scenario applies to approving triggers: a decline code, or pending until resolve", async () => {
    const funds = await createPayment(co, { test_scenario: 'INSUFFICIENT_FUNDS' });
    let res = await postForm(h, `/pay/${funds.id}/card`, { ...goodCard, token: await pageToken(h, funds.id) });
    assert.match((await getPage(h, res.location!)).body, /No hay fondos suficientes/);
    assert.equal((await paymentStatus(co, funds.id)).status, 'declined');

    const pending = await createPayment(co, { test_scenario: 'pending' });
    res = await postForm(h, `/pay/${pending.id}/card`, { ...goodCard, token: await pageToken(h, pending.id) });
    const page = await getPage(h, res.location!);
    assert.match(page.body, /Tu pago está en proceso/);
    assert.doesNotMatch(page.body, /id="form-card"/, 'no second attempt while one is in progress');
    assert.equal((await paymentStatus(co, pending.id)).status, 'in_progress');
    // A POST from a page opened before is sent back to the page, not charged twice.
    const stale = await postForm(h, `/pay/${pending.id}/card`, { ...goodCard, token: formToken(pending.id) });
    assert.equal(stale.status, 303);
    assert.equal((await intentsOf(co, pending.id)).length, 1);
    assert.equal((await co.req({ url: `/v1/payments/${pending.id}/resolve`, body: { action: 'approve' } })).body.status, 'approved');
    assert.match((await getPage(h, `/pay/${pending.id}`)).body, /Pago recibido/);
  });

  test('partial payments: the payer pays at least the minimum, the page shows what remains', async () => {
    const p = await createPayment(co, { amount: 300000, partial_payment_config: { enabled: true, minimum_amount: 50000 } });
    let page = await getPage(h, `/pay/${p.id}`);
    assert.match(page.body, /Puedes pagarlo por partes, desde \$ 50\.000/);
    assert.match(page.body, /Desde \$ 50\.000 hasta \$ 300\.000/);
    page = await getPage(h, `/pay/${p.id}?monto=20.000`);
    assert.match(page.body, /El monto mínimo es \$ 50\.000/);
    page = await getPage(h, `/pay/${p.id}?monto=100.000`);
    assert.match(page.body, /Vas a pagar <strong>\$ 100\.000<\/strong>/);
    assert.match(page.body, /name="amount" value="100000\.00"/);
    const token = tokenOf(page.body);
    const low = await postForm(h, `/pay/${p.id}/card`, { ...goodCard, token, amount: '10000' });
    assert.equal(low.status, 422);
    assert.match(low.body, /El monto mínimo es \$ 50\.000/);

    let res = await postForm(h, `/pay/${p.id}/card`, { ...goodCard, token, amount: '100000.00' });
    page = await getPage(h, res.location!);
    assert.match(page.body, /Recibimos tu pago de \$ 100\.000/);
    assert.match(page.body, /Falta por pagar \$ 200\.000/);
    assert.match(page.body, /Ya pagado<\/dt><dd>\$ 100\.000/);
    let got = await paymentStatus(co, p.id);
    assert.equal(got.status, 'partially_paid');
    assert.equal(got.amount_paid, 100000);

    // Without a chosen amount, an attempt takes what remains.
    res = await postForm(h, `/pay/${p.id}/walleta`, { phone: '399 111 1111', token: tokenOf(page.body) });
    got = await paymentStatus(co, p.id);
    assert.equal(got.status, 'approved');
    assert.equal(got.amount_paid, 300000);
  });

  test('open amounts: the payer chooses the amount (currency minimum) before the methods appear', async () => {
    const p = await createPayment(co, { amount: undefined, open_amount: true, allows: ['card'] });
    let page = await getPage(h, `/pay/${p.id}`);
    assert.match(page.body, /Monto abierto/);
    assert.match(page.body, /¿Cuánto quieres pagar\?/);
    assert.doesNotMatch(page.body, /id="form-card"/);
    page = await getPage(h, `/pay/${p.id}?monto=500`);
    assert.match(page.body, /El monto mínimo es \$ 1\.000/);
    page = await getPage(h, `/pay/${p.id}?monto=abc`);
    assert.match(page.body, /Escribe un monto válido/);
    page = await getPage(h, `/pay/${p.id}?monto=${encodeURIComponent('$ 25.000')}`);
    assert.match(page.body, /Pagar \$ 25\.000/);
    const res = await postForm(h, `/pay/${p.id}/card`, { ...goodCard, token: tokenOf(page.body), amount: '25000.00' });
    assert.equal(res.status, 303);
    const got = await paymentStatus(co, p.id);
    assert.equal(got.status, 'approved');
    assert.equal(got.amount_paid, 25000);
    const none = await createPayment(co, { amount: undefined, open_amount: true });
    const r2 = await postForm(h, `/pay/${none.id}/card`, { ...goodCard, token: formToken(none.id) });
    assert.equal(r2.status, 422);
    assert.match(r2.body, /Escribe el monto que vas a pagar/);
  });

  test('wallets: the test phones approve and decline; a malformed number is explained', async () => {
    const p = await createPayment(co, { allows: ['walleta', 'walletb'] });
    let res = await postForm(h, `/pay/${p.id}/walletb`, { phone: '300 123', token: await pageToken(h, p.id) });
    assert.equal(res.status, 422);
    assert.match(res.body, /número de celular colombiano/);
    assert.match(res.body, /399 111 1111 aprueba/, 'the test phones are shown in test mode');
    assert.match(res.body, /value="300 123"/);
    res = await postForm(h, `/pay/${p.id}/walletb`, { phone: '+573992222222', token: await pageToken(h, p.id) });
    assert.match((await getPage(h, res.location!)).body, /Tu pago no fue aprobado/);
    res = await postForm(h, `/pay/${p.id}/walleta`, { phone: '(399) 111-1111', token: await pageToken(h, p.id) });
    assert.equal((await paymentStatus(co, p.id)).status, 'approved');
    assert.deepEqual((await intentsOf(co, p.id)).map((i) => `${i.method}:${i.status}`).sort(), ['walleta:approved', 'walletb:declined']);
  });

  test('bank transfer: the sandbox bank page approves or rejects, then the payer comes back', async () => {
    const p = await createPayment(co, { allows: ['banklink'], redirect_url: 'https://comercio.example/listo' });
    let page = await getPage(h, `/pay/${p.id}`);
    const bank = /<option value="([0-9a-f-]{36})">([^<]+)<\/option>/.exec(page.body);
    assert.ok(bank, 'the banklink banks are listed');
    const noBank = await postForm(h, `/pay/${p.id}/banklink`, { token: tokenOf(page.body), bank: '' });
    assert.equal(noBank.status, 422);
    assert.match(noBank.body, /Elige tu banco de la lista/);

    let res = await postForm(h, `/pay/${p.id}/banklink`, { token: tokenOf(page.body), bank: bank[1] });
    assert.equal(res.status, 303);
    assert.match(res.location!, new RegExp(`^/pay/${p.id}/attempts/pi_`));
    page = await getPage(h, res.location!);
    assert.match(page.body, /Banco de pruebas/);
    assert.match(page.body, /Autoriza el pago/);
    assert.ok(page.body.includes(bank[2]), 'the chosen bank is named');
    assert.equal((await paymentStatus(co, p.id)).status, 'in_progress');
    // Meanwhile the payment page offers to continue or abandon that attempt.
    const main = await getPage(h, `/pay/${p.id}`);
    assert.match(main.body, /Tienes un pago sin terminar/);

    res = await postForm(h, res.location!.split('?')[0], { token: tokenOf(page.body), action: 'reject' });
    assert.match((await getPage(h, res.location!)).body, /Tu pago no fue aprobado/);
    assert.equal((await paymentStatus(co, p.id)).status, 'declined');

    res = await postForm(h, `/pay/${p.id}/banklink`, { token: tokenOf(page.body), bank: bank[1] });
    const attempt = res.location!.split('?')[0];
    res = await postForm(h, attempt, { token: tokenOf(page.body), action: 'approve' });
    assert.equal(res.location, `https://comercio.example/listo?payment_id=${p.id}`);
    assert.equal((await paymentStatus(co, p.id)).status, 'approved');
    // The settled attempt's page now sends the payer back to the payment page.
    assert.equal((await getPage(h, attempt)).status, 303);
  });

  test('instant-key QR: an EMVCo payload with a valid CRC, "Simular pago", and a QR that times out', async () => {
    const p = await createPayment(co, { allows: ['rtkey', 'card'], options: { rtkey: { expires_in: 10 } } });
    let res = await postForm(h, `/pay/${p.id}/rtkey`, { token: await pageToken(h, p.id) });
    const page = await getPage(h, res.location!);
    assert.match(page.body, /<svg class="qr"[^>]*role="img" aria-label="Código QR para pagar \$ 150\.000/);
    const payload = /<textarea id="payload"[^>]*>([^<]+)<\/textarea>/.exec(page.body)![1];
    assert.ok(payload.startsWith('000201010212'));
    assert.match(payload, /5303170/);
    assert.match(payload, /5409150000\.00/);
    assert.equal(payload.slice(-4), crc16(payload.slice(0, -4)));
    assert.match(page.body, /Simular pago/);

    // Abandoned: paying by card instead cancels the QR attempt first.
    res = await postForm(h, `/pay/${p.id}/card`, { ...goodCard, card_number: '4000000000000002', token: tokenOf(page.body) });
    const intents = await intentsOf(co, p.id);
    assert.deepEqual(intents.map((i) => `${i.method}:${i.remarks}`).sort(), ['card:TRANSACTION_REJECTED', 'rtkey:CANCELLED_BY_PAYER']);

    res = await postForm(h, `/pay/${p.id}/rtkey`, { token: tokenOf(page.body) });
    const attempt = res.location!;
    h.clock.advance(11 * 60_000);
    res = await getPage(h, attempt);
    assert.equal(res.status, 303);
    assert.match((await getPage(h, res.location!)).body, /El medio de pago no respondió a tiempo/);

    res = await postForm(h, `/pay/${p.id}/rtkey`, { token: tokenOf(page.body) });
    res = await postForm(h, res.location!, { token: tokenOf(page.body), action: 'approve' });
    assert.equal((await paymentStatus(co, p.id)).status, 'approved');
  });

  test('a method the payment does not offer is refused', async () => {
    const p = await createPayment(co, { allows: ['card'] });
    const res = await postForm(h, `/pay/${p.id}/walleta`, { phone: '3991111111', token: await pageToken(h, p.id) });
    assert.equal(res.status, 303);
    assert.equal((await intentsOf(co, p.id)).length, 0);
  });

  test('live payments without a connector: the page offers no method and no sandbox control, and a POST attempts nothing (422)', async () => {
    const p = await createPayment(co, { redirect_url: 'https://comercio.example/x' }, 'live');
    const page = await getPage(h, `/pay/${p.id}`);
    assert.equal(page.status, 200);
    assert.match(page.body, /Pago en línea no disponible todavía/);
    assert.doesNotMatch(page.body, /Modo de prueba|Datos de prueba|Simular pago|id="form-card"/);
    for (const [method, fields] of [
      ['card', goodCard],
      ['walleta', { phone: '3991111111' }],
      ['walletb', { phone: '3991111111' }],
      ['banklink', { bank: 'x' }],
      ['rtkey', {}],
    ] as const) {
      const res = await postForm(h, `/pay/${p.id}/${method}`, { ...fields, token: formToken(p.id) });
      assert.equal(res.status, 422, `${method}: ${res.status}`);
      assert.match(res.body, /no está habilitado para cobros reales/);
    }
    assert.equal((await intentsOf(co, p.id, 'live')).length, 0);
    assert.equal((await paymentStatus(co, p.id, 'live')).status, 'pending');
  });

  test('live payments with a connector for one rail: only that method is offered, without test data', async () => {
    const remove = installFakeLiveConnector(h.runtime.deps, { companyId: co.company.id, rails: ['walleta'] });
    try {
      const p = await createPayment(co, { allows: ['card', 'walleta'] }, 'live');
      const page = await getPage(h, `/pay/${p.id}`);
      assert.match(page.body, /id="metodo-walleta"/);
      assert.doesNotMatch(page.body, /id="metodo-card"|Modo de prueba|Pruebas:/);
      const refused = await postForm(h, `/pay/${p.id}/card`, { ...goodCard, token: formToken(p.id) });
      assert.equal(refused.status, 422);
      const paid = await postForm(h, `/pay/${p.id}/walleta`, { phone: '3001234567', token: formToken(p.id) });
      assert.equal(paid.status, 303);
      assert.equal((await paymentStatus(co, p.id, 'live')).status, 'approved');
    } finally {
      remove();
    }
  });

  test(`after ${DECLINES_PER_HOUR} declined attempts in an hour the page pauses payments (card testing brake)`, async () => {
    const p = await createPayment(co);
    const token = await pageToken(h, p.id);
    for (let i = 0; i < DECLINES_PER_HOUR; i++) {
      assert.equal((await postForm(h, `/pay/${p.id}/card`, { ...goodCard, card_number: '4000000000000002', token })).status, 303);
    }
    const res = await postForm(h, `/pay/${p.id}/card`, { ...goodCard, token });
    assert.equal(res.status, 429);
    assert.match(res.body, /Demasiados intentos/);
    h.clock.advance(61 * 60_000);
    assert.equal((await postForm(h, `/pay/${p.id}/card`, { ...goodCard, token: await pageToken(h, p.id) })).status, 303);
    assert.equal((await paymentStatus(co, p.id)).status, 'approved');
  });

  test('the payment portal finds payments by reference, in their own environment', async () => {
    const other = await h.company('Otra Empresa SAS');
    const ref = `REF-${Date.now().toString(36).toUpperCase()}`;
    const mine = await createPayment(co, { reference: ref, title: 'Cuota de administración' });
    const live = await createPayment(co, { reference: ref, title: 'Cuota real' }, 'live');
    const theirs = await createPayment(other, { reference: ref, title: 'Otra cuota' });
    let page = await getPage(h, '/portal');
    assert.equal(page.status, 200);
    assert.match(page.body, /<label for="referencia">Referencia de pago<\/label>/);
    assert.doesNotMatch(page.body, /Encontramos/);
    page = await getPage(h, '/portal?referencia=abc');
    assert.equal(page.status, 422);
    assert.match(page.body, /entre 6 y 30 caracteres/);
    page = await getPage(h, `/portal?referencia=${ref}`);
    assert.match(page.body, /Encontramos 3 cobros/);
    for (const p of [mine, live, theirs]) assert.ok(page.body.includes(`href="/pay/${p.id}"`));
    assert.match(page.body, /Otra Empresa SAS/);
    page = await getPage(h, `/portal?referencia=${ref}&empresa=${co.company.id}`);
    assert.match(page.body, /Encontramos 2 cobros/);
    assert.ok(!page.body.includes(theirs.id));
    page = await getPage(h, '/portal?referencia=NO-EXISTE-123');
    assert.match(page.body, /No encontramos cobros con la referencia <strong>NO-EXISTE-123<\/strong>/);
    // The link opens the payment in its own environment (the live one shows live terms).
    assert.match((await getPage(h, `/pay/${live.id}`)).body, /no disponible todavía/);
  });
});

describe('payer page helpers', () => {
  test('Luhn, card checks, phones and amounts as payers type them', () => {
    assert.ok(luhnValid('4242424242424242'));
    assert.ok(luhnValid('4000000000000002'));
    assert.ok(luhnValid('4000000000000069'));
    assert.ok(!luhnValid('4242424242424241'));
    const now = new Date('2025-05-31T12:00:00Z');
    const ok = checkCard({ card_number: '4242-4242 4242 4242', exp_month: '5', exp_year: '25', cvv: '123', holder_name: 'Ana' }, now);
    assert.deepEqual(ok.errors, {});
    assert.equal(ok.card!.brand, 'Visa');
    assert.equal(ok.card!.last4, '4242');
    assert.ok(checkCard({ card_number: '4242424242424242', exp_month: '4', exp_year: '2025', cvv: '123', holder_name: 'Ana' }, now).errors.exp_year);
    assert.ok(
      checkCard({ card_number: '378282246310005', exp_month: '4', exp_year: '2030', cvv: '123', holder_name: 'Ana' }, now).errors.cvv,
      'Amex needs 4 digits',
    );
    assert.equal(normalisePhone('399 111 1111'), '+573991111111');
    assert.equal(normalisePhone('+57 (399) 111-1111'), '+573991111111');
    assert.equal(normalisePhone('12345'), null);
    assert.equal(parsePesosInput('150.000'), 15_000_000n);
    assert.equal(parsePesosInput('$ 1.500,50'), 150_050n);
    assert.equal(parsePesosInput('1500.5'), 150_050n);
    assert.equal(parsePesosInput('1,500.50'), 150_050n);
    assert.equal(parsePesosInput('25000'), 2_500_000n);
    assert.equal(parsePesosInput('12,3,4'), null);
    assert.equal(parsePesosInput(''), null);
  });

  test('EMVCo payload: TLV fields and CRC-16/CCITT-FALSE', () => {
    assert.equal(crc16('123456789'), '29B1');
    const payload = emvcoPayload({ key: 'sbx_rtkey_x', merchant: 'Café Ñandú SAS', amountMinor: 15_000_050n, currency: 'COP', reference: 'pi_1' });
    assert.match(payload, /^000201010212/);
    assert.match(payload, /5914Cafe Nandu SAS/);
    assert.match(payload, /5409150000\.50/);
    assert.equal(payload.slice(-8, -4), '6304');
  });

  test('form tokens are bound to the payment, the secret and a day', () => {
    const t = new FormTokens('s3cret');
    const now = new Date();
    const token = t.issue('pay_a', now);
    assert.ok(t.verify('pay_a', token, now));
    assert.ok(!t.verify('pay_b', token, now));
    assert.ok(!new FormTokens('other').verify('pay_a', token, now));
    assert.ok(!t.verify('pay_a', token, new Date(now.getTime() + 25 * 3_600_000)));
    assert.ok(!t.verify('pay_a', undefined, now));
    assert.ok(!t.verify('pay_a', 'garbage', now));
  });
});
