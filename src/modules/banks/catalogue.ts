import { nameUuid } from '../../platform/ids.ts';

/**
 * The bank catalogue: Colombian banks, financing companies and mobile wallets with their
 * ACH Colombia / Superfinanciera entity codes. The source of truth for the `banks` table, which
 * seedBanks() upserts at every start. Ids derive from the code, so they never change.
 */
export type SupportedType = 'savings' | 'checking' | 'electronic_deposit';

export interface BankEntry {
  code: string;
  name: string;
  supported_types: SupportedType[];
  mask: string | null;
  /** Average debit settlement time in hours (docs/accounts.md); null when unknown. */
  transaction_avg: number | null;
  available: boolean;
  banklink: boolean;
  connection_type: 'CONFIRMATION' | 'DATA';
  /** Display rank: 1 is shown first. */
  priority: number;
  instructions: string;
  is_platform: boolean;
  logo_text: string;
  logo_color: string;
}

export const BANK_NAMESPACE = 'recaudo:bank';
export const PLATFORM_BANK_CODE = 'RECAUDO';

export function bankId(code: string): string {
  return nameUuid(BANK_NAMESPACE, code);
}

/** The bank of WALLET accounts (another company's balance on this platform). Never listed. */
export const PLATFORM_BANK_ID = bankId(PLATFORM_BANK_CODE);

const S: SupportedType[] = ['savings'];
const SC: SupportedType[] = ['savings', 'checking'];
const E: SupportedType[] = ['electronic_deposit'];
const SCE: SupportedType[] = ['savings', 'checking', 'electronic_deposit'];

const accountHelp = (name: string, digits: string, kinds = 'de ahorros o corriente') =>
  `<p>Ingresa el número de tu cuenta ${kinds} de <strong>${name}</strong> (${digits}), sin puntos ni guiones.</p><p>El débito se procesa el siguiente día hábil.</p>`;
const savingsHelp = (name: string) => accountHelp(name, 'número completo', 'de ahorros');
const walletHelp = (name: string) =>
  `<p>Ingresa el número de celular registrado en <strong>${name}</strong>.</p><p>Recibirás una notificación en la aplicación para confirmar la inscripción; el débito es en tiempo real.</p>`;
const depositHelp = (name: string) =>
  `<p>Ingresa el número de celular asociado a tu depósito <strong>${name}</strong>.</p><p>El débito se procesa en tiempo real.</p>`;

type Row = [
  code: string,
  name: string,
  types: SupportedType[],
  mask: string | null,
  banklink: boolean,
  available: boolean,
  logoText: string,
  color: string,
  instructions?: string,
];

// Banks in display order (priority = position). Colours are approximations of each brand.
const BANKS: Row[] = [
  ['1007', 'Bancolombia', SCE, '###-######-##', true, true, 'BC', '#FDDA24', accountHelp('Bancolombia', '11 dígitos')],
  ['1507', 'Nequi', E, '3#########', true, true, 'N', '#200020', walletHelp('Nequi')],
  ['1051', 'Davivienda', SCE, '####-####-####', true, true, 'DV', '#ED1C24', accountHelp('Davivienda', '12 dígitos')],
  ['1551', 'Daviplata', E, '3#########', true, true, 'DP', '#E30613', walletHelp('Daviplata')],
  ['1001', 'Banco de Bogotá', SC, '###-#####-#', true, true, 'BB', '#003DA5', accountHelp('Banco de Bogotá', '9 dígitos')],
  ['1013', 'BBVA Colombia', SC, '####-####-##-##########', true, true, 'BBVA', '#004481', accountHelp('BBVA', '9 a 20 dígitos')],
  ['1809', 'Nu Colombia', S, null, true, true, 'NU', '#820AD1', savingsHelp('Nu')],
  ['1023', 'Banco de Occidente', SC, '###-#####-#', true, true, 'BO', '#0046AD', accountHelp('Banco de Occidente', '9 dígitos')],
  ['1052', 'Banco AV Villas', SC, '###-#####-#', true, true, 'AV', '#0065B3', accountHelp('AV Villas', '9 dígitos')],
  ['1002', 'Banco Popular', SC, '###-#####-#', true, true, 'BP', '#00884A', accountHelp('Banco Popular', '9 dígitos')],
  ['1019', 'Scotiabank Colpatria', SC, '####-######', true, true, 'SC', '#EC111A', accountHelp('Scotiabank Colpatria', '10 dígitos')],
  ['1032', 'Banco Caja Social', SC, '###-#########-#', true, true, 'CS', '#005DA9', accountHelp('Banco Caja Social', '11 dígitos')],
  ['1040', 'Banco Agrario de Colombia', SC, '#-###-##-#####-#', true, true, 'BA', '#009A44', accountHelp('Banco Agrario', '12 dígitos')],
  ['1006', 'Banco Itaú', SC, null, true, true, 'IT', '#EC7000', accountHelp('Itaú', 'número completo')],
  ['1012', 'Banco GNB Sudameris', SC, null, true, true, 'GNB', '#00573F', accountHelp('GNB Sudameris', 'número completo')],
  ['1065', 'Banco Santander de Negocios Colombia', SC, null, true, true, 'SN', '#EC0000', accountHelp('Santander', 'número completo')],
  ['1062', 'Banco Falabella', SC, null, true, true, 'BF', '#43B02A', accountHelp('Banco Falabella', 'número completo')],
  ['1060', 'Banco Pichincha', SC, null, true, true, 'PI', '#FFD100', accountHelp('Banco Pichincha', 'número completo')],
  ['1061', 'Bancoomeva', SC, null, true, true, 'BCO', '#007A33', accountHelp('Bancoomeva', 'número completo')],
  ['1063', 'Banco Finandina', S, null, true, true, 'BFI', '#00A3E0', savingsHelp('Finandina')],
  ['1069', 'Banco Serfinanza', S, null, true, true, 'SF', '#00338D', savingsHelp('Serfinanza')],
  ['1070', 'Lulo Bank', S, null, true, true, 'LB', '#C4F000', savingsHelp('Lulo Bank')],
  ['1801', 'Movii', E, '3#########', true, true, 'MV', '#FF2D8A', depositHelp('Movii')],
  ['1066', 'Banco Cooperativo Coopcentral', SC, null, false, true, 'CC', '#00843D', accountHelp('Coopcentral', 'número completo')],
  ['1053', 'Banco W', S, null, false, true, 'W', '#F37021', savingsHelp('Banco W')],
  ['1059', 'Bancamía', S, null, false, true, 'BM', '#E4032E', savingsHelp('Bancamía')],
  ['1047', 'Banco Mundo Mujer', S, null, false, true, 'MM', '#E6007E', savingsHelp('Banco Mundo Mujer')],
  ['1097', 'Dale!', E, '3#########', false, true, 'D!', '#00C1D4', depositHelp('Dale!')],
  ['1811', 'RappiPay', S, null, false, true, 'RP', '#FF441F', savingsHelp('RappiPay')],
  ['1558', 'Ban100', S, null, false, true, '100', '#1D3C6E', savingsHelp('Ban100')],
  ['1370', 'Coltefinanciera', S, null, false, true, 'CF', '#0C4DA2', savingsHelp('Coltefinanciera')],
  ['1292', 'Confiar Cooperativa Financiera', S, null, false, true, 'CO', '#F58220', savingsHelp('Confiar')],
  // Citibank sold its Colombian consumer business (2022): kept for existing records, not for new debits.
  [
    '1009',
    'Citibank Colombia',
    SC,
    null,
    false,
    false,
    'CI',
    '#056DAE',
    '<p>Citibank Colombia ya no recibe inscripciones de cuentas de personas naturales.</p>',
  ],
];

/** Wallets that need the holder to confirm the enrollment in their app (POST /accounts/{id}/validate). */
const CONFIRMATION_CODES = new Set(['1507', '1551']);

function entry(row: Row, index: number): BankEntry {
  const [code, name, types, mask, banklink, available, logoText, color, instructions] = row;
  const wallet = CONFIRMATION_CODES.has(code);
  return {
    code,
    name,
    supported_types: types,
    mask,
    transaction_avg: types.length === 1 && types[0] === 'electronic_deposit' ? 0 : 24,
    available,
    banklink,
    connection_type: wallet ? 'CONFIRMATION' : 'DATA',
    priority: index + 1,
    instructions: instructions ?? accountHelp(name, 'número completo'),
    is_platform: false,
    logo_text: logoText,
    logo_color: color,
  };
}

export const PLATFORM_BANK: BankEntry = {
  code: PLATFORM_BANK_CODE,
  name: 'Recaudo',
  supported_types: [],
  mask: 'cmp_…',
  transaction_avg: 0,
  available: true,
  banklink: false,
  connection_type: 'DATA',
  priority: 1000,
  instructions: '<p>Saldo de otra empresa en Recaudo: usa su identificador de empresa (<code>cmp_…</code>).</p>',
  is_platform: true,
  logo_text: 'R',
  logo_color: '#1F2937',
};

export const CATALOGUE: BankEntry[] = [...BANKS.map(entry), PLATFORM_BANK];

/**
 * The banks that take TURBO cash-outs (same-day interbank transfers, docs/cashouts.md): the large
 * ACH participants with an express channel, and the two wallets. Any other bank takes ACH only.
 */
const TURBO_BANK_CODES = new Set(['1007', '1051', '1001', '1013', '1023', '1002', '1052', '1507', '1551']);

export function offersTurbo(code: string): boolean {
  return TURBO_BANK_CODES.has(code);
}
