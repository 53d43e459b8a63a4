import assert from 'node:assert/strict';
import type { Company, Harness } from '../harness.ts';
import { nitCheckDigit } from '../../src/documents/dian/nit.ts';
import { setCompany } from '../../src/modules/companies/service.ts';

/** Helpers for the companies a platform onboards (docs/companies.md); not a test file itself. */

export const KYB_NIT = '900123456';
export const KYB_DV = String(nitCheckDigit(KYB_NIT));

/** OnePay's KYB body for POST /v1/companies, as the real client sends it. */
export function kybBody(overrides: Record<string, unknown> = {}) {
  return {
    type: 'organization',
    name: 'Tienda Hija',
    legal_name: 'Tienda Hija S.A.S.',
    document_type: 'NIT',
    document_number: `${KYB_NIT}-${KYB_DV}`,
    phone: '3001234567',
    email: 'Finanzas@TiendaHija.co',
    website: 'https://tiendahija.co',
    economic_activity: '4791',
    industry: '0742',
    sales: 120000000,
    fiscal_responsibilities: ['O_47', 'R-99-PN'],
    retention_rules: { iva: true, ica: false, fuente: true },
    city_id: 5001,
    address: { address: 'Calle 10 # 43-12', hint: 'Oficina 301', zipcode: '050021' },
    documents: { rut: 'https://files.example.com/rut.pdf', ccc: 'https://files.example.com/ccc.pdf' },
    company_owner: {
      name: 'Lucía',
      last_name: 'Restrepo',
      phone: '+573005556677',
      email: 'lucia@tiendahija.co',
      document_type: 'cc',
      dni: '43123456',
    },
    account: { type: 'savings', bank_id: '1007', number: '12345678901', terms: true },
    ...overrides,
  };
}

/** The operator's `recaudo companies set --platform true`. */
export async function makePlatform(h: Harness, co: Company): Promise<void> {
  await setCompany(h.runtime.deps.database.db, { company: co.company.id, platform: 'true' });
}

/** Flags `co` a platform and onboards one company with its test key; answers the new company's id. */
export async function onboardedCompany(h: Harness, co: Company, name = 'Tienda Hija'): Promise<string> {
  await makePlatform(h, co);
  const res = await co.req({ url: '/v1/companies', body: kybBody({ name }) });
  assert.equal(res.status, 200, res.raw);
  return res.body.id;
}
