/**
 * Spanish texts the rails send on behalf of a company. Every value that comes from a company or a
 * payer is escaped in HTML and flattened to one line in SMS text and e-mail subjects.
 */

const MINOR_DIGITS: Record<string, number> = { COP: 2, USD: 2, MXN: 2 };

/**
 * An amount (in major units: pesos, dollars) as es-CO writes it: `$ 150.000`, `$ 1.500,50`,
 * `US$ 150,00`. Whole pesos show no decimals. Plain spaces, so SMS text stays simple.
 */
export function formatAmount(amount: number | bigint | string, currency = 'COP'): string {
  const value = typeof amount === 'string' ? amount.trim() : amount;
  if (typeof value === 'string' && !/^-?\d+(\.\d+)?$/.test(value)) throw new Error(`not a decimal amount: ${amount}`);
  if (typeof value === 'number' && !Number.isFinite(value)) throw new Error(`not a finite amount: ${amount}`);
  const whole = typeof value === 'bigint' || (typeof value === 'number' ? Number.isInteger(value) : !/\.\d*[1-9]/.test(value));
  const digits = MINOR_DIGITS[currency] ?? 2;
  const fraction = currency === 'COP' && whole ? 0 : digits;
  const format = new Intl.NumberFormat('es-CO', {
    style: 'currency',
    currency,
    minimumFractionDigits: fraction,
    maximumFractionDigits: Math.max(fraction, digits),
  });
  // `format` takes decimal strings exactly (no float rounding on large amounts).
  return plainSpaces(format.format(value as number));
}

/** `15 de mayo de 2025, 11:59 p. m.` in Colombian time. */
export function formatDateTime(at: Date): string {
  const date = new Intl.DateTimeFormat('es-CO', { dateStyle: 'long', timeZone: 'America/Bogota' }).format(at);
  const time = new Intl.DateTimeFormat('es-CO', { hour: 'numeric', minute: '2-digit', hour12: true, timeZone: 'America/Bogota' }).format(at);
  return plainSpaces(`${date}, ${time}`);
}

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

function plainSpaces(value: string): string {
  return value.replace(/[\u00a0\u202f\u2007]/g, ' ');
}

/** One line, no control characters, at most `max` characters (with an ellipsis when cut). */
function line(value: string, max: number): string {
  const flat = value
    .replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ')
    .replace(/\s{2,}/g, ' ')
    .trim();
  return flat.length > max ? `${flat.slice(0, max - 1).trimEnd()}…` : flat;
}

export interface PaymentLinkMessageInput {
  companyName: string;
  /** What the payment is for (the payment's title). */
  title: string;
  /** The amount as the payer reads it (see `formatAmount`); omitted for an open-amount link. */
  amountText?: string;
  /** The absolute `payment_link`. */
  link: string;
  expiresAt?: Date;
}

export interface PaymentLinkMessage {
  /** For the messaging rail. */
  sms: string;
  email: { subject: string; text: string; html: string };
}

/** The texts that carry a payment link to the payer, by messaging and by e-mail. */
export function paymentLinkMessage(input: PaymentLinkMessageInput): PaymentLinkMessage {
  let url: URL;
  try {
    url = new URL(input.link);
  } catch {
    throw new Error(`the payment link is not a URL: ${input.link}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`the payment link must be http(s): ${input.link}`);
  const link = url.toString();
  const company = line(input.companyName, 80);
  const title = line(input.title, 255);
  const amount = input.amountText === undefined ? undefined : line(input.amountText, 40);
  const expires = input.expiresAt ? formatDateTime(input.expiresAt) : undefined;

  // SMS: short, one segment where possible; the title is cut so the link always fits.
  const smsTitle = line(input.title, 60);
  const sms =
    `${company} le envió una solicitud de pago: ${smsTitle}` +
    (amount ? `, por ${amount}` : '') +
    `. Pague aquí: ${link}` +
    (expires ? ` (vence el ${expires})` : '');

  const subject = amount ? `${company}: solicitud de pago por ${amount}` : `${company}: solicitud de pago`;

  const rows: [string, string][] = [['Concepto', title]];
  rows.push(['Valor', amount ?? 'El que usted indique al pagar']);
  if (expires) rows.push(['Vence', `${expires} (hora de Colombia)`]);

  const text = [
    'Hola:',
    '',
    `${company} le envió una solicitud de pago.`,
    '',
    ...rows.map(([k, v]) => `${k}: ${v}`),
    '',
    'Para pagar, abra este enlace:',
    link,
    '',
    `Si no reconoce este cobro, no pague y comuníquese con ${company}.`,
    '',
    `Enviado por Recaudo en nombre de ${company}.`,
    '',
  ].join('\n');

  const h = escapeHtml;
  const html = emailLayout(
    subject,
    company,
    `<p style="margin:0 0 16px;font-size:16px;"><strong>${h(company)}</strong> le envió una solicitud de pago.</p>
${detailsTable(rows, { emphasizeAmount: true })}
<p style="margin:0 0 24px;"><a href="${h(link)}" style="display:inline-block;padding:12px 24px;background:#0b5cad;color:#ffffff;text-decoration:none;border-radius:6px;font-size:16px;font-weight:bold;">Pagar ahora</a></p>
<p style="margin:0 0 16px;font-size:14px;color:#52606d;">Si el botón no funciona, copie este enlace en su navegador:<br><a href="${h(link)}" style="color:#0b5cad;word-break:break-all;">${h(link)}</a></p>
<p style="margin:0 0 16px;font-size:14px;color:#52606d;">Si no reconoce este cobro, no pague y comuníquese con ${h(company)}.</p>
`,
  );
  return { sms, email: { subject, text, html } };
}

/** The e-mail frame every payer message shares: greeting, card, and the sender line. */
function emailLayout(subject: string, company: string, inner: string): string {
  const h = escapeHtml;
  return `<!doctype html>
<html lang="es">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${h(subject)}</title>
</head>
<body style="margin:0;padding:0;background:#f4f5f7;font-family:Arial,Helvetica,sans-serif;color:#1f2933;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="background:#f4f5f7;">
<tr><td align="center" style="padding:24px 12px;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="max-width:560px;background:#ffffff;border-radius:8px;">
<tr><td style="padding:24px;">
<p style="margin:0 0 16px;font-size:16px;">Hola:</p>
${inner}<p style="margin:0;font-size:12px;color:#7b8794;">Enviado por Recaudo en nombre de ${h(company)}.</p>
</td></tr>
</table>
</td></tr>
</table>
</body>
</html>
`;
}

export interface PaymentCancelledMessageInput {
  companyName: string;
  /** What the payment was for (the payment's title). */
  title: string;
  /** The amount as the payer reads it; omitted for an open-amount link. */
  amountText?: string;
}

/** The texts that tell the payer a payment request was cancelled (DELETE with `notify`). No link: there is nothing to pay. */
export function paymentCancelledMessage(input: PaymentCancelledMessageInput): PaymentLinkMessage {
  const company = line(input.companyName, 80);
  const title = line(input.title, 255);
  const amount = input.amountText === undefined ? undefined : line(input.amountText, 40);
  const sms =
    `${company} anuló la solicitud de pago: ${line(input.title, 60)}` +
    (amount ? `, por ${amount}` : '') +
    '. Ya no debe pagarla; el enlace de pago dejó de funcionar.';
  const subject = `${company}: solicitud de pago anulada`;
  const rows: [string, string][] = [['Concepto', title]];
  if (amount) rows.push(['Valor', amount]);
  const text = [
    'Hola:',
    '',
    `${company} anuló esta solicitud de pago:`,
    '',
    ...rows.map(([k, v]) => `${k}: ${v}`),
    '',
    'Ya no debe pagarla; el enlace de pago dejó de funcionar.',
    `Si tiene preguntas, comuníquese con ${company}.`,
    '',
    `Enviado por Recaudo en nombre de ${company}.`,
    '',
  ].join('\n');
  const h = escapeHtml;
  const html = emailLayout(
    subject,
    company,
    `<p style="margin:0 0 16px;font-size:16px;"><strong>${h(company)}</strong> anuló esta solicitud de pago:</p>
${detailsTable(rows)}
<p style="margin:0 0 16px;font-size:16px;">Ya no debe pagarla; el enlace de pago dejó de funcionar.</p>
<p style="margin:0 0 16px;font-size:14px;color:#52606d;">Si tiene preguntas, comuníquese con ${h(company)}.</p>
`,
  );
  return { sms, email: { subject, text, html } };
}

export interface PaymentReceiptMessageInput {
  companyName: string;
  title: string;
  /** The amount paid, as the payer reads it. */
  amountText: string;
  /** How it was paid, in the payer's words (Tarjeta, PSE, Nequi…). */
  methodText: string;
  /** When, in Bogotá time. */
  paidAt: Date;
  reference: string;
}

/** The receipt a payer gets once a payment is paid: who, what, how much, how, when, which reference. */
export function paymentReceiptMessage(input: PaymentReceiptMessageInput): PaymentLinkMessage {
  const company = line(input.companyName, 80);
  const title = line(input.title, 255);
  const amount = line(input.amountText, 40);
  const method = line(input.methodText, 40);
  const when = formatDateTime(input.paidAt);
  const reference = line(input.reference, 80);
  const sms = `${company} recibió su pago de ${line(input.title, 60)} por ${amount} (${method}), el ${when}. Referencia: ${reference}.`;
  const subject = `${company}: recibo de su pago`;
  const rows: [string, string][] = [
    ['Concepto', title],
    ['Valor', amount],
    ['Medio de pago', method],
    ['Fecha', when],
    ['Referencia', reference],
  ];
  const text = [
    'Hola:',
    '',
    `${company} recibió su pago:`,
    '',
    ...rows.map(([k, v]) => `${k}: ${v}`),
    '',
    'Guarde este mensaje como comprobante.',
    '',
    `Enviado por Recaudo en nombre de ${company}.`,
    '',
  ].join('\n');
  const h = escapeHtml;
  const html = emailLayout(
    subject,
    company,
    `<p style="margin:0 0 16px;font-size:16px;"><strong>${h(company)}</strong> recibió su pago:</p>
${detailsTable(rows)}
<p style="margin:0 0 16px;font-size:14px;color:#52606d;">Guarde este mensaje como comprobante.</p>
`,
  );
  return { sms, email: { subject, text, html } };
}

/** The e-mails' table of details (label, value), escaped; the link e-mail sets its amount in bold. */
function detailsTable(rows: [string, string][], opts: { emphasizeAmount?: boolean } = {}): string {
  const h = escapeHtml;
  const cells = rows.map(
    ([k, v]) =>
      `<tr><td style="padding:4px 16px 4px 0;color:#52606d;">${h(k)}</td><td style="padding:4px 0;${opts.emphasizeAmount && k === 'Valor' ? 'white-space:nowrap;font-weight:bold;' : ''}">${h(v)}</td></tr>`,
  );
  return `<table role="presentation" cellpadding="0" cellspacing="0" style="margin:0 0 24px;font-size:16px;">
${cells.join('\n')}
</table>`;
}
