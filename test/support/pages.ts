import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Company, Harness } from '../harness.ts';

/** Helpers shared by the payer pages' tests (not a test file itself). */

export interface PageRes {
  status: number;
  body: string;
  headers: Record<string, string | string[] | number | undefined>;
  location: string | undefined;
}

/** The page's text with no-break spaces as plain spaces (amounts are `$\u00a0150.000` in HTML). */
export function plain(text: string): string {
  return text.replace(/\u00a0/g, ' ');
}

export async function getPage(h: Harness, url: string): Promise<PageRes> {
  const res = await h.app.inject({ method: 'GET', url });
  return { status: res.statusCode, body: plain(res.body), headers: res.headers, location: res.headers.location as string | undefined };
}

export async function postForm(h: Harness, url: string, fields: Record<string, string>): Promise<PageRes> {
  const res = await h.app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(fields).toString(),
  });
  return { status: res.statusCode, body: plain(res.body), headers: res.headers, location: res.headers.location as string | undefined };
}

/** The form token of a rendered payer page. */
export function tokenOf(body: string): string {
  const m = /name="token" value="([^"]+)"/.exec(body);
  assert.ok(m, 'the page has a form token');
  return m[1];
}

export async function pageToken(h: Harness, paymentId: string): Promise<string> {
  const page = await getPage(h, `/pay/${paymentId}`);
  assert.equal(page.status, 200, page.body.slice(0, 500));
  return tokenOf(page.body);
}

export const goodCard = {
  card_number: '4242 4242 4242 4242',
  exp_month: '12',
  exp_year: String(new Date().getUTCFullYear() + 3),
  cvv: '123',
  holder_name: 'Ana María Pérez',
};

export async function createPayment(co: Company, body: Record<string, unknown> = {}, env: 'test' | 'live' = 'test') {
  const res = await co.req({
    url: '/v1/payments',
    body: { title: 'Factura de marzo', description: 'Servicio de internet hogar', amount: 150000, ...body },
    env,
  });
  assert.equal(res.status, 200, res.raw);
  return res.body as { id: string; payment_link: string; [k: string]: any };
}

export async function paymentStatus(co: Company, id: string, env: 'test' | 'live' = 'test') {
  const res = await co.req({ url: `/v1/payments/${id}`, env });
  assert.equal(res.status, 200, res.raw);
  return res.body as { status: string; amount_paid: number; [k: string]: any };
}

export async function intentsOf(co: Company, id: string, env: 'test' | 'live' = 'test') {
  const res = await co.req({ url: `/v1/payments/${id}/intents`, env });
  assert.equal(res.status, 200, res.raw);
  return res.body.data as { id: string; status: string; method: string; remarks: string | null; amount: number; network_id: string | null }[];
}

/**
 * Every text-like column (text, varchar, json, jsonb) of the company's rows in the payments,
 * payment_intents and events tables that contains `needle`. Used to prove a card number is kept
 * nowhere.
 */
export async function columnsContaining(h: Harness, companyId: string, needle: string): Promise<string[]> {
  const db = h.runtime.deps.database.db;
  const columns = await sql<{ table_name: string; column_name: string }>`
    SELECT table_name, column_name FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name IN ('payments', 'payment_intents', 'events')
      AND data_type IN ('text', 'character varying', 'json', 'jsonb')
    ORDER BY table_name, column_name`.execute(db);
  assert.ok(columns.rows.length >= 10, 'found the text columns');
  const hits: string[] = [];
  for (const { table_name, column_name } of columns.rows) {
    const found = await sql<{ n: string }>`
      SELECT count(*) AS n FROM ${sql.table(table_name)}
      WHERE company_id = ${companyId} AND ${sql.ref(column_name)}::text LIKE ${`%${needle}%`}`.execute(db);
    if (Number(found.rows[0].n) > 0) hits.push(`${table_name}.${column_name}`);
  }
  return hits;
}

/**
 * The consent fields of a live payer page's method form (docs/pages.md "Consent"): the box ticked
 * and the provider's contracts the page showed (their permalinks).
 */
export function consentOf(body: string): { consent: string; terms_permalink: string; personal_data_permalink: string } {
  const terms = /name="terms_permalink" value="([^"]+)"/.exec(body);
  const personal = /name="personal_data_permalink" value="([^"]+)"/.exec(body);
  assert.ok(terms && personal, 'the page shows the provider’s contracts');
  return { consent: '1', terms_permalink: terms[1], personal_data_permalink: personal[1] };
}

/**
 * What a payer's browser does on a live card form: the card straight to the provider's
 * tokenization (`<base>/tokens/cards` with the public key; a fake's `url` ends in `/v1`), answered
 * with the provider's single-use token, which is all the form posts to Recaudo.
 */
export async function providerCardToken(provider: { url: string; publicKey: string }, pan: string, holder = 'Ana María Pérez'): Promise<string> {
  const res = await fetch(`${provider.url}/tokens/cards`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${provider.publicKey}` },
    body: JSON.stringify({
      number: pan,
      cvc: '123',
      exp_month: '12',
      exp_year: String((new Date().getUTCFullYear() + 3) % 100),
      card_holder: holder,
    }),
  });
  const body = (await res.json()) as { data?: { id?: string } };
  assert.equal(res.status, 201, JSON.stringify(body));
  return body.data!.id!;
}
