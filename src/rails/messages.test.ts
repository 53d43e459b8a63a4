import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { escapeHtml, formatAmount, formatDateTime, paymentCancelledMessage, paymentLinkMessage } from './messages.ts';

describe('payment link messages', () => {
  test('amounts in Colombian pesos as es-CO writes them', () => {
    assert.equal(formatAmount(150000), '$ 150.000');
    assert.equal(formatAmount(150000n), '$ 150.000');
    assert.equal(formatAmount('150000.00'), '$ 150.000');
    assert.equal(formatAmount(1000), '$ 1.000');
    assert.equal(formatAmount(500_000_000n), '$ 500.000.000');
    assert.equal(formatAmount('1500.5'), '$ 1.500,50');
    assert.equal(formatAmount('123456789012345678.25'), '$ 123.456.789.012.345.678,25', 'no float rounding');
    assert.equal(formatAmount(150, 'USD'), 'US$ 150,00');
    assert.equal(formatAmount('5', 'MXN'), 'MXN 5,00');
    assert.ok(!/[\u00a0\u202f]/.test(formatAmount(150000)), 'plain spaces only');
    assert.throws(() => formatAmount('1e5'));
    assert.throws(() => formatAmount(Number.NaN));
  });

  test('dates in Colombian time', () => {
    // 04:59 UTC is 11:59 p. m. of the day before in Bogotá (UTC-5).
    assert.equal(formatDateTime(new Date('2025-05-16T04:59:00Z')), '15 de mayo de 2025, 11:59 p. m.');
    assert.equal(formatDateTime(new Date('2025-01-01T15:05:00Z')), '1 de enero de 2025, 10:05 a. m.');
  });

  test('SMS and e-mail texts in Spanish', () => {
    const m = paymentLinkMessage({
      companyName: 'Panadería La Espiga S.A.S.',
      title: 'Pedido de cumpleaños',
      amountText: formatAmount(150000),
      link: 'https://pagos.recaudo.co/p/pay_01abc',
      expiresAt: new Date('2025-05-16T04:59:00Z'),
    });
    assert.equal(
      m.sms,
      'Panadería La Espiga S.A.S. le envió una solicitud de pago: Pedido de cumpleaños, por $ 150.000. ' +
        'Pague aquí: https://pagos.recaudo.co/p/pay_01abc (vence el 15 de mayo de 2025, 11:59 p. m.)',
    );
    assert.equal(m.email.subject, 'Panadería La Espiga S.A.S.: solicitud de pago por $ 150.000');
    assert.match(m.email.text, /^Hola:\n\nPanadería La Espiga S\.A\.S\. le envió una solicitud de pago\.\n/);
    assert.match(
      m.email.text,
      /\nConcepto: Pedido de cumpleaños\nValor: \$ 150\.000\nVence: 15 de mayo de 2025, 11:59 p\. m\. \(hora de Colombia\)\n/,
    );
    assert.match(m.email.text, /\nPara pagar, abra este enlace:\nhttps:\/\/pagos\.recaudo\.co\/p\/pay_01abc\n/);
    assert.match(m.email.html, /<html lang="es">/);
    assert.match(m.email.html, /<a href="https:\/\/pagos\.recaudo\.co\/p\/pay_01abc"[^>]*>Pagar ahora<\/a>/);
    assert.match(m.email.html, /<strong>Panadería La Espiga S\.A\.S\.<\/strong> le envió una solicitud de pago\./);
    assert.match(m.email.html, />\$ 150\.000</);
  });

  test('an open-amount link without expiry', () => {
    const m = paymentLinkMessage({ companyName: 'Fundación Niñez Feliz', title: 'Donación', link: 'https://pagos.recaudo.co/p/pay_02' });
    assert.equal(m.sms, 'Fundación Niñez Feliz le envió una solicitud de pago: Donación. Pague aquí: https://pagos.recaudo.co/p/pay_02');
    assert.equal(m.email.subject, 'Fundación Niñez Feliz: solicitud de pago');
    assert.match(m.email.text, /\nValor: El que usted indique al pagar\n/);
    assert.doesNotMatch(m.email.text, /Vence/);
  });

  test('HTML is escaped; SMS and subject stay on one line', () => {
    const m = paymentLinkMessage({
      companyName: 'Evil <script>alert("x")</script> & Co\r\nBcc: a@b.co',
      title: `Factura "1" <img src=x onerror='y'>`,
      amountText: '$ 1.000',
      link: 'https://pagos.recaudo.co/p/pay_03?a=1&b="2"',
    });
    assert.doesNotMatch(m.email.html, /<script>|<img/);
    assert.match(m.email.html, /Evil &lt;script&gt;alert\(&quot;x&quot;\)&lt;\/script&gt; &amp; Co Bcc: a@b\.co/);
    assert.match(m.email.html, /Factura &quot;1&quot; &lt;img src=x onerror=&#39;y&#39;&gt;/);
    assert.match(m.email.html, /href="https:\/\/pagos\.recaudo\.co\/p\/pay_03\?a=1&amp;b=%222%22"/);
    assert.doesNotMatch(m.email.subject, /[\r\n]/);
    assert.doesNotMatch(m.sms, /[\r\n]/);
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });

  test('a long title is cut in the SMS, never the link', () => {
    const title = 'Cuota de administración del conjunto residencial '.repeat(4);
    const m = paymentLinkMessage({ companyName: 'Conjunto Los Álamos', title, amountText: '$ 350.000', link: 'https://pagos.recaudo.co/p/pay_04' });
    assert.match(
      m.sms,
      /Cuota de administración del conjunto residencial Cuota de a…, por \$ 350\.000\. Pague aquí: https:\/\/pagos\.recaudo\.co\/p\/pay_04$/,
    );
    assert.ok(m.email.text.includes(title.trim()), 'the e-mail keeps the whole title');
  });

  test('refuses a link that is not http(s)', () => {
    assert.throws(() => paymentLinkMessage({ companyName: 'A', title: 'B', link: 'javascript:alert(1)' }), /http/);
    assert.throws(() => paymentLinkMessage({ companyName: 'A', title: 'B', link: '/p/relative' }), /not a URL/);
  });

  test('the cancellation text: Spanish, no link, escaped, one-line SMS', () => {
    const m = paymentCancelledMessage({ companyName: 'Acme <b>SAS</b>', title: 'Factura\r\nFV-1', amountText: formatAmount(150000) });
    assert.equal(
      m.sms,
      'Acme <b>SAS</b> anuló la solicitud de pago: Factura FV-1, por $ 150.000. Ya no debe pagarla; el enlace de pago dejó de funcionar.',
    );
    assert.equal(m.email.subject, 'Acme <b>SAS</b>: solicitud de pago anulada');
    assert.match(m.email.text, /Valor: \$ 150\.000/);
    assert.match(m.email.html, /Acme &lt;b&gt;SAS&lt;\/b&gt;/);
    assert.doesNotMatch(m.email.html, /<b>SAS/);
    assert.doesNotMatch(m.email.html, /href=/);
    const open = paymentCancelledMessage({ companyName: 'Acme', title: 'Donación' });
    assert.equal(open.sms, 'Acme anuló la solicitud de pago: Donación. Ya no debe pagarla; el enlace de pago dejó de funcionar.');
    assert.doesNotMatch(open.email.text, /Valor/);
  });
});
