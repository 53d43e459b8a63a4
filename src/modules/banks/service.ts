import type { Selectable } from 'kysely';
import type { Executor } from '../../platform/db/database.ts';
import type { BanksTable } from '../../platform/db/schema.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { parseListQuery, type ListSpec } from '../../platform/lists/lists.ts';
import { isUuid } from '../../platform/ids.ts';
import { CATALOGUE, bankId } from './catalogue.ts';
import type { BanklinkPort } from '../../rails/index.ts';
import { bankLogoDataUrl, bankLogoSvg, bankLogoUrl } from './logo.ts';
import { BANK_ORDERS, type BankResponse, type BankSummary } from './schemas.ts';

export type BankRow = Selectable<BanksTable>;

const bankList: ListSpec<'banklink', (typeof BANK_ORDERS)[number]> = { filters: ['banklink'], sorts: BANK_ORDERS };
const byName = new Intl.Collator('es', { sensitivity: 'base', numeric: true });

/** Upserts the catalogue (every start, and the test template). Rows are never deleted: accounts point at them. */
export async function seedBanks(db: Executor): Promise<void> {
  const rows = CATALOGUE.map((b) => ({
    id: bankId(b.code),
    code: b.code,
    name: b.name,
    supported_types: JSON.stringify(b.supported_types),
    mask: b.mask,
    transaction_avg: b.transaction_avg,
    available: b.available,
    banklink: b.banklink,
    connection_type: b.connection_type,
    priority: b.priority,
    instructions: b.instructions,
    is_platform: b.is_platform,
    logo_text: b.logo_text,
    logo_color: b.logo_color,
  }));
  await db
    .insertInto('banks')
    .values(rows)
    .onConflict((oc) =>
      oc.column('id').doUpdateSet((eb) => ({
        code: eb.ref('excluded.code'),
        name: eb.ref('excluded.name'),
        supported_types: eb.ref('excluded.supported_types'),
        mask: eb.ref('excluded.mask'),
        transaction_avg: eb.ref('excluded.transaction_avg'),
        available: eb.ref('excluded.available'),
        banklink: eb.ref('excluded.banklink'),
        connection_type: eb.ref('excluded.connection_type'),
        priority: eb.ref('excluded.priority'),
        instructions: eb.ref('excluded.instructions'),
        is_platform: eb.ref('excluded.is_platform'),
        logo_text: eb.ref('excluded.logo_text'),
        logo_color: eb.ref('excluded.logo_color'),
      })),
    )
    .execute();
}

export function toBankResponse(row: BankRow, baseUrl: string): BankResponse {
  return {
    id: row.id,
    code: row.code,
    name: row.name,
    supported_types: row.supported_types as BankResponse['supported_types'],
    mask: row.mask,
    transaction_avg: row.transaction_avg === null ? null : Number(row.transaction_avg),
    available: row.available,
    banklink: row.banklink,
    connection_type: row.connection_type,
    priority: row.priority,
    logo: bankLogoUrl(baseUrl, row.id),
    instructions: row.instructions,
    base64_logo: bankLogoDataUrl(row),
  };
}

export function toBankSummary(row: Pick<BankRow, 'id' | 'name' | 'logo_text' | 'logo_color'>, baseUrl: string): BankSummary {
  return { id: row.id, name: row.name, logo: bankLogoUrl(baseUrl, row.id), base64_logo: bankLogoDataUrl(row) };
}

/** Any catalogue bank by id, the platform bank included (accounts need it); undefined when absent. */
export async function findBank(db: Executor, id: string): Promise<BankRow | undefined> {
  if (!isUuid(id)) return undefined;
  return db.selectFrom('banks').selectAll().where('id', '=', id.toLowerCase()).executeTakeFirst();
}

/**
 * A provider's sandbox test institution as a bank of its own (BanklinkPort.testBanks): an id no
 * catalogue bank has (a name-based UUID of `provider-test:<code>`), listed after the real banks.
 */
function testBankRow(bank: { code: string; name: string }): BankRow {
  return {
    id: bankId(`provider-test:${bank.code}`),
    code: bank.code,
    name: `${bank.name} (banco de pruebas)`,
    supported_types: [],
    mask: null,
    transaction_avg: null,
    available: true,
    banklink: true,
    connection_type: 'CONFIRMATION',
    priority: 1_000,
    instructions: 'Banco de pruebas del sandbox del proveedor: no mueve dinero real.',
    is_platform: false,
    logo_text: 'PR',
    logo_color: '#6b7280',
  } as BankRow;
}

async function testBanksOf(rail: Pick<BanklinkPort, 'testBanks'> | null, catalogueCodes: ReadonlySet<string>): Promise<BankRow[]> {
  if (!rail?.testBanks) return [];
  const banks = await rail.testBanks().catch(() => []);
  return banks.filter((b) => !catalogueCodes.has(b.code)).map(testBankRow);
}

/**
 * The bank a banklink charge names: a catalogue bank, or one of the rail's provider test banks
 * (a connector on its provider's sandbox); undefined when neither.
 */
export async function findBanklinkBank(db: Executor, id: string, rail: Pick<BanklinkPort, 'testBanks'> | null): Promise<BankRow | undefined> {
  const found = await findBank(db, id);
  if (found || !rail?.testBanks || !isUuid(id)) return found;
  const codes = new Set((await db.selectFrom('banks').select('code').execute()).map((r) => r.code));
  return (await testBanksOf(rail, codes)).find((b) => b.id === id.toLowerCase());
}

/**
 * Whether a bank takes banklink payments on this rail: the catalogue says so and, for a connector
 * that names its banks (PSE institutions), the connector lists its code.
 */
export async function takesBanklink(rail: Pick<BanklinkPort, 'bankCodes'>, bank: Pick<BankRow, 'banklink' | 'code'>): Promise<boolean> {
  if (!bank.banklink) return false;
  if (!rail.bankCodes) return true;
  // The provider's list out of reach: the catalogue decides (the provider refuses a bank it lacks, and the charge fails with its reason).
  const codes = await rail.bankCodes().catch(() => null);
  return codes ? codes.has(bank.code) : true;
}

const last = (v: unknown) => (Array.isArray(v) ? v[v.length - 1] : v);

/**
 * GET /banks: a bare array (not paginated; page/per_page ignored). `banklink` or
 * `filter[banklink]` filters; `order` (or `sort`) is one of the whitelist, otherwise 400.
 */
export async function listBanks(
  db: Executor,
  query: Record<string, unknown>,
  baseUrl: string,
  banklinkRail: Pick<BanklinkPort, 'bankCodes' | 'testBanks'> | null = null,
): Promise<BankResponse[]> {
  const { page: _p, per_page: _pp, limit: _l, order, sort, banklink, ...rest } = query;
  const orderKey = order !== undefined ? 'order' : 'sort';
  const orderValue = last(order ?? sort);
  if (orderValue !== undefined && orderValue !== '') {
    const field = String(orderValue).replace(/^-/, '');
    if (!(BANK_ORDERS as readonly string[]).includes(field)) {
      throw new ApiError('invalid_list_query', { errors: { [orderKey]: [`must be one of ${BANK_ORDERS.flatMap((o) => [o, `-${o}`]).join(', ')}`] } });
    }
  }
  if (banklink !== undefined && rest['filter[banklink]'] === undefined) rest['filter[banklink]'] = banklink;
  const list = parseListQuery(bankList, { ...rest, sort: orderValue });
  const flag = list.filters.banklink;
  if (flag !== undefined && flag !== 'true' && flag !== 'false') {
    throw validationError({ [banklink !== undefined ? 'banklink' : 'filter[banklink]']: ['must be true or false'] });
  }
  let rows = await db.selectFrom('banks').selectAll().where('is_platform', '=', false).execute();
  // A connector naming its banks (PSE institutions) decides which take banklink for this company.
  const codes = banklinkRail?.bankCodes ? await banklinkRail.bankCodes().catch(() => null) : null;
  if (codes) rows = rows.map((r) => ({ ...r, banklink: r.banklink && codes.has(r.code) }));
  // A connector on its provider's sandbox: its test banks too (PSE tried end to end before going live).
  rows = [...rows, ...(await testBanksOf(banklinkRail, new Set(rows.map((r) => r.code))))];
  if (flag !== undefined) rows = rows.filter((r) => r.banklink === (flag === 'true'));
  // Sorted here so both engines agree on Spanish names whatever the database collation.
  const sortBy = list.sort ?? { field: 'priority', direction: 'asc' as const };
  const sign = sortBy.direction === 'asc' ? 1 : -1;
  rows.sort((a, b) =>
    sortBy.field === 'name'
      ? sign * byName.compare(a.name, b.name) || a.priority - b.priority
      : sign * (a.priority - b.priority) || byName.compare(a.name, b.name),
  );
  return rows.map((r) => toBankResponse(r, baseUrl));
}

/** A listed bank (not the platform bank) or 404 record_not_found. */
export async function getBank(db: Executor, id: string, baseUrl: string): Promise<BankResponse> {
  const row = await findBank(db, id);
  if (!row || row.is_platform) throw new ApiError('record_not_found');
  return toBankResponse(row, baseUrl);
}

export async function getBankLogo(db: Executor, id: string): Promise<string> {
  const row = await findBank(db, id);
  if (!row) throw new ApiError('record_not_found');
  return bankLogoSvg(row);
}
