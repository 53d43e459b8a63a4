import { XMLValidator } from 'fast-xml-parser';
import { nitCheckDigit } from './nit.ts';
import { child, children, normalizeLineEnds, parseXml, path, attr, textOf, XmlError, type XmlDocument, type XmlElement } from './c14n.ts';
import { dianAmount, identityCode, softwareSecurityCode } from './cufe.ts';
import { NS } from './ubl.ts';
import { verifyUblSignature } from './xades.ts';

/**
 * What the sandbox authority runs on a real document: well-formedness, structure, signature
 * (digests and RSA recomputed with our C14N, XAdES semantics), CUFE/CUDE recomputed from the XML's
 * own values and the caller's technical key (invoices) or PIN (notes), totals (lines → tax totals →
 * monetary totals), check digits, and the number inside the numbering range. Values are read from
 * the same tree whose signature was verified (no second parser that could disagree).
 *
 * Rule codes are DIAN's for invoices (F…); credit notes use the same rule with C in place of F.
 * Codes named in reference/dian.md: FAD06, FAB27b, FAJ24, FAK24, FAU02/04/06/14. The others
 * (ZB01 structure, FAA02, ZE02 signature, FAS07 tax totals, FAX07 line arithmetic, FAB11b range)
 * are our best reading of the annex, unconfirmed: they live in RULES only.
 */

export const RULES = {
  structure: { code: 'ZB01', message: 'Fallo en el esquema XML del archivo' },
  extensions: { code: 'FAA02', message: 'El documento debe contener sts:DianExtensions y ds:Signature en ext:UBLExtensions' },
  signature: { code: 'ZE02', message: 'Valor de la firma inválido' },
  identityCode: { code: 'FAD06', message: 'Valor del CUFE no está calculado correctamente' },
  softwareSecurityCode: { code: 'FAB27b', message: 'El valor del SoftwareSecurityCode no está calculado correctamente' },
  issuerDv: { code: 'FAJ24', message: 'El DV del NIT del emisor no es correcto' },
  receiverDv: { code: 'FAK24', message: 'El DV del NIT del adquirente no es correcto' },
  lineExtension: { code: 'FAU02', message: 'LineExtensionAmount no es igual a la suma de los valores de las líneas' },
  taxExclusive: { code: 'FAU04', message: 'TaxExclusiveAmount no es igual a la suma de las bases gravables' },
  taxInclusive: { code: 'FAU06', message: 'TaxInclusiveAmount no es igual al valor bruto más los tributos' },
  payable: { code: 'FAU14', message: 'PayableAmount no es igual al valor total con tributos menos descuentos más cargos menos anticipos' },
  taxTotals: { code: 'FAS07', message: 'Los totales de tributos no corresponden a la suma de los tributos de las líneas' },
  lineArithmetic: { code: 'FAX07', message: 'Los valores de la línea no son consistentes (precio, cantidad, tributo)' },
  range: { code: 'FAB11b', message: 'El número del documento no está dentro del rango de numeración autorizado' },
} as const;

export interface DianRuleFailure {
  code: string;
  message: string;
}

export interface DianVerification {
  ok: boolean;
  /** The CUFE/CUDE written in the document (cbc:UUID), when readable. */
  identityCode: string | null;
  failures: DianRuleFailure[];
}

export interface DianVerifyExpectation {
  /** Technical key of the numbering range (invoices) or the software PIN (credit notes). */
  key: string;
  environment: 'test' | 'live';
  resolution?: { prefix: string; from: number; to: number };
  /** Software PIN, when known, to check the SoftwareSecurityCode (the key already is the PIN for notes). */
  softwarePin?: string;
}

const MICRO = 1_000_000n;

/** Decimal text → integer millionths (exact); null when malformed. */
function micros(s: string | null): bigint | null {
  if (s === null) return null;
  const m = /^\s*(-?)(\d+)(?:\.(\d{1,6}))?\s*$/.exec(s);
  if (!m) return null;
  const v = BigInt(m[2]) * MICRO + BigInt((m[3] ?? '').padEnd(6, '0'));
  return m[1] ? -v : v;
}

/** Millionths → DIAN amount text (two decimals, truncated). */
function amountText(v: bigint): string {
  return dianAmount(v / 10_000n);
}

class Missing extends Error {}

export function verifyDianDocument(xml: string, expect: DianVerifyExpectation): DianVerification {
  const failures: DianRuleFailure[] = [];
  let identity: string | null = null;
  let prefix = 'F';
  const fail = (rule: { code: string; message: string }, detail?: string) => {
    const code = prefix === 'F' ? rule.code : rule.code.replace(/^F/, prefix);
    failures.push({ code, message: `Regla: ${code}, Rechazo: ${rule.message}${detail ? ` (${detail})` : ''}` });
  };
  const done = (): DianVerification => ({ ok: failures.length === 0, identityCode: identity, failures });

  const text = normalizeLineEnds(xml);
  let wellFormed: ReturnType<typeof XMLValidator.validate>;
  try {
    wellFormed = XMLValidator.validate(text);
  } catch (err) {
    wellFormed = { err: { code: 'InvalidXml', msg: (err as Error).message, line: 0, col: 0 } };
  }
  if (wellFormed !== true) {
    fail(RULES.structure, `XML mal formado: ${wellFormed.err.msg} (línea ${wellFormed.err.line})`);
    return done();
  }
  let doc: XmlDocument;
  try {
    doc = parseXml(text);
  } catch (err) {
    fail(RULES.structure, err instanceof XmlError ? err.message : 'XML ilegible');
    return done();
  }
  const root = doc.root;
  const invoice = root.ns === NS.invoice && root.local === 'Invoice';
  const note = root.ns === NS.creditNote && root.local === 'CreditNote';
  if (!invoice && !note) {
    fail(RULES.structure, `elemento raíz ${root.name} no es Invoice ni CreditNote de UBL 2.1`);
    return done();
  }
  prefix = invoice ? 'F' : 'C';
  const cbc = (el: XmlElement | null, local: string) => child(el, NS.cbc, local);
  const cac = (el: XmlElement | null, local: string) => child(el, NS.cac, local);
  const need = (el: XmlElement | null, what: string): XmlElement => {
    if (!el) throw new Missing(what);
    return el;
  };
  const amountOf = (el: XmlElement | null, what: string): bigint => {
    const v = micros(textOf(need(el, what)));
    if (v === null) throw new Missing(`${what} (valor no numérico)`);
    return v;
  };

  identity = textOf(cbc(root, 'UUID'))?.trim() ?? null;

  // Extensions and signature.
  const exts = children(child(root, NS.ext, 'UBLExtensions') ?? root, NS.ext, 'UBLExtension');
  const dianExt = exts.map((e) => path(e, [NS.ext, 'ExtensionContent'], [NS.sts, 'DianExtensions'])).find((e) => e) ?? null;
  if (!dianExt) fail(RULES.extensions, 'falta sts:DianExtensions');
  let sigProblems: string[];
  try {
    sigProblems = verifyUblSignature(doc).problems;
  } catch (err) {
    sigProblems = [`la firma no se puede verificar: ${(err as Error).message}`];
  }
  if (sigProblems.length) fail(RULES.signature, sigProblems.join('; '));

  try {
    const number = textOf(need(cbc(root, 'ID'), 'cbc:ID'))!.trim();
    const issueDate = textOf(need(cbc(root, 'IssueDate'), 'cbc:IssueDate'))!.trim();
    const issueTime = textOf(need(cbc(root, 'IssueTime'), 'cbc:IssueTime'))!.trim();
    const supplierScheme = need(
      path(root, [NS.cac, 'AccountingSupplierParty'], [NS.cac, 'Party'], [NS.cac, 'PartyTaxScheme']),
      'AccountingSupplierParty/Party/PartyTaxScheme',
    );
    const customerScheme = need(
      path(root, [NS.cac, 'AccountingCustomerParty'], [NS.cac, 'Party'], [NS.cac, 'PartyTaxScheme']),
      'AccountingCustomerParty/Party/PartyTaxScheme',
    );
    const supplierId = need(cbc(supplierScheme, 'CompanyID'), 'emisor cbc:CompanyID');
    const customerId = need(cbc(customerScheme, 'CompanyID'), 'adquirente cbc:CompanyID');
    const nit = textOf(supplierId)!.trim();
    const receiverNumber = textOf(customerId)!.trim();
    const monetary = need(cac(root, 'LegalMonetaryTotal'), 'cac:LegalMonetaryTotal');
    const lineExtension = amountOf(cbc(monetary, 'LineExtensionAmount'), 'LineExtensionAmount');
    const taxExclusive = amountOf(cbc(monetary, 'TaxExclusiveAmount'), 'TaxExclusiveAmount');
    const taxInclusive = amountOf(cbc(monetary, 'TaxInclusiveAmount'), 'TaxInclusiveAmount');
    const payable = amountOf(cbc(monetary, 'PayableAmount'), 'PayableAmount');
    const optional = (local: string) => (cbc(monetary, local) ? amountOf(cbc(monetary, local), local) : 0n);
    const allowances = optional('AllowanceTotalAmount');
    const charges = optional('ChargeTotalAmount');
    const prepaid = optional('PrepaidAmount');
    const rounding = optional('PayableRoundingAmount');

    // Check digits.
    if (attr(supplierId, 'schemeName') !== '31' || !/^\d+$/.test(nit) || String(nitCheckDigit(nit)) !== attr(supplierId, 'schemeID')) {
      fail(RULES.issuerDv, `NIT ${nit} DV ${attr(supplierId, 'schemeID') ?? '(ninguno)'}`);
    }
    if (
      attr(customerId, 'schemeName') === '31' &&
      (!/^\d+$/.test(receiverNumber) || String(nitCheckDigit(receiverNumber)) !== attr(customerId, 'schemeID'))
    ) {
      fail(RULES.receiverDv, `NIT ${receiverNumber} DV ${attr(customerId, 'schemeID') ?? '(ninguno)'}`);
    }

    // Lines.
    const lineTag = invoice ? 'InvoiceLine' : 'CreditNoteLine';
    const qtyTag = invoice ? 'InvoicedQuantity' : 'CreditedQuantity';
    const lines = children(root, NS.cac, lineTag);
    if (!lines.length) throw new Missing(`cac:${lineTag}`);
    let sumLines = 0n,
      sumTaxedLines = 0n;
    const lineTaxByKey = new Map<string, bigint>();
    const lineProblems: string[] = [];
    for (const l of lines) {
      const id = textOf(cbc(l, 'ID'))?.trim() ?? '?';
      const ext = amountOf(cbc(l, 'LineExtensionAmount'), `línea ${id} LineExtensionAmount`);
      sumLines += ext;
      const qty = micros(textOf(need(cbc(l, qtyTag), `línea ${id} ${qtyTag}`)));
      const price = amountOf(path(l, [NS.cac, 'Price'], [NS.cbc, 'PriceAmount']), `línea ${id} PriceAmount`);
      const base = micros(textOf(path(l, [NS.cac, 'Price'], [NS.cbc, 'BaseQuantity']))) ?? MICRO;
      if (qty === null || qty <= 0n || base <= 0n) lineProblems.push(`línea ${id}: cantidad inválida`);
      else {
        const expected = (price * qty) / base;
        const diff = expected - ext;
        if (diff > 10_000n || diff < -10_000n) lineProblems.push(`línea ${id}: ${amountText(price)} × ${qty} / ${base} ≠ ${amountText(ext)}`);
      }
      const taxTotals = children(l, NS.cac, 'TaxTotal');
      if (taxTotals.length) sumTaxedLines += ext;
      for (const tt of taxTotals) {
        const ttAmount = amountOf(cbc(tt, 'TaxAmount'), `línea ${id} TaxAmount`);
        let subs = 0n;
        for (const st of children(tt, NS.cac, 'TaxSubtotal')) {
          const taxable = amountOf(cbc(st, 'TaxableAmount'), `línea ${id} TaxableAmount`);
          const amt = amountOf(cbc(st, 'TaxAmount'), `línea ${id} TaxSubtotal/TaxAmount`);
          const pct = micros(textOf(path(st, [NS.cac, 'TaxCategory'], [NS.cbc, 'Percent'])) ?? textOf(cbc(st, 'Percent')));
          const code = textOf(path(st, [NS.cac, 'TaxCategory'], [NS.cac, 'TaxScheme'], [NS.cbc, 'ID']))?.trim() ?? '';
          subs += amt;
          if (pct !== null) {
            const expectedTax = (taxable * pct) / (100n * MICRO);
            const d = expectedTax - amt;
            if (d > 10_000n || d < -10_000n)
              lineProblems.push(`línea ${id}: tributo ${code} ${amountText(amt)} ≠ ${amountText(taxable)} × ${amountText(pct / 10_000n)} %`);
          }
          const key = `${code}|${pct}`;
          lineTaxByKey.set(key, (lineTaxByKey.get(key) ?? 0n) + amt);
        }
        if (subs !== ttAmount) lineProblems.push(`línea ${id}: TaxAmount ≠ suma de TaxSubtotal`);
      }
    }
    if (lineProblems.length) fail(RULES.lineArithmetic, lineProblems.slice(0, 5).join('; '));

    // Document tax totals.
    const taxByCode: Record<string, bigint> = { '01': 0n, '04': 0n, '03': 0n };
    const docTaxByKey = new Map<string, bigint>();
    const taxProblems: string[] = [];
    let taxSum = 0n;
    for (const tt of children(root, NS.cac, 'TaxTotal')) {
      const ttAmount = amountOf(cbc(tt, 'TaxAmount'), 'TaxTotal/TaxAmount');
      taxSum += ttAmount;
      let subs = 0n;
      let code = '';
      for (const st of children(tt, NS.cac, 'TaxSubtotal')) {
        const amt = amountOf(cbc(st, 'TaxAmount'), 'TaxSubtotal/TaxAmount');
        const pct = micros(textOf(path(st, [NS.cac, 'TaxCategory'], [NS.cbc, 'Percent'])) ?? textOf(cbc(st, 'Percent')));
        code = textOf(path(st, [NS.cac, 'TaxCategory'], [NS.cac, 'TaxScheme'], [NS.cbc, 'ID']))?.trim() ?? '';
        subs += amt;
        const key = `${code}|${pct}`;
        docTaxByKey.set(key, (docTaxByKey.get(key) ?? 0n) + amt);
      }
      if (subs !== ttAmount) taxProblems.push(`tributo ${code}: TaxAmount ${amountText(ttAmount)} ≠ suma de subtotales ${amountText(subs)}`);
      if (code in taxByCode) taxByCode[code] += ttAmount;
    }
    for (const k of new Set([...docTaxByKey.keys(), ...lineTaxByKey.keys()])) {
      const a = docTaxByKey.get(k) ?? 0n,
        b = lineTaxByKey.get(k) ?? 0n;
      if (a !== b) taxProblems.push(`tributo ${k.replace('|', ' tarifa ')}: documento ${amountText(a)} ≠ líneas ${amountText(b)}`);
    }
    if (taxProblems.length) fail(RULES.taxTotals, taxProblems.slice(0, 5).join('; '));

    // Monetary totals.
    if (lineExtension !== sumLines) fail(RULES.lineExtension, `${amountText(lineExtension)} ≠ ${amountText(sumLines)}`);
    if (taxExclusive !== sumTaxedLines) fail(RULES.taxExclusive, `${amountText(taxExclusive)} ≠ ${amountText(sumTaxedLines)}`);
    if (taxInclusive !== lineExtension + taxSum) fail(RULES.taxInclusive, `${amountText(taxInclusive)} ≠ ${amountText(lineExtension + taxSum)}`);
    const expectedPayable = taxInclusive - allowances + charges - prepaid + rounding;
    if (payable !== expectedPayable) fail(RULES.payable, `${amountText(payable)} ≠ ${amountText(expectedPayable)}`);

    // CUFE / CUDE from the document's own values.
    const recomputed = identityCode({
      number,
      issueDate,
      issueTime,
      lineExtension: lineExtension / 10_000n,
      taxByCode: { '01': taxByCode['01'] / 10_000n, '04': taxByCode['04'] / 10_000n, '03': taxByCode['03'] / 10_000n },
      payable: payable / 10_000n,
      issuerNit: nit,
      receiverNumber,
      key: expect.key,
      environment: expect.environment === 'live' ? '1' : '2',
    });
    const env = textOf(cbc(root, 'ProfileExecutionID'))?.trim();
    if (identity !== recomputed) fail(RULES.identityCode, `${invoice ? 'CUFE' : 'CUDE'} ${identity ?? '(ninguno)'}`);
    else if (env !== (expect.environment === 'live' ? '1' : '2'))
      fail(RULES.identityCode, `ProfileExecutionID ${env ?? '(ninguno)'} no corresponde al ambiente`);

    // SoftwareSecurityCode (needs the PIN: the key itself for notes).
    const pin = expect.softwarePin ?? (note ? expect.key : undefined);
    if (pin !== undefined && dianExt) {
      const softwareId = textOf(path(dianExt, [NS.sts, 'SoftwareProvider'], [NS.sts, 'SoftwareID']))?.trim() ?? '';
      const written = textOf(child(dianExt, NS.sts, 'SoftwareSecurityCode'))?.trim();
      if (written !== softwareSecurityCode(softwareId, pin, number)) fail(RULES.softwareSecurityCode);
    }

    // Numbering range.
    if (expect.resolution) {
      const { prefix: p, from, to } = expect.resolution;
      const folio = number.startsWith(p) ? number.slice(p.length) : null;
      if (folio === null || !/^\d+$/.test(folio) || Number(folio) < from || Number(folio) > to) {
        fail(RULES.range, `${number} fuera de ${p}${from}–${p}${to}`);
      }
    }
  } catch (err) {
    // Never an exception for a bad document: whatever could not be read is a structure rejection.
    fail(RULES.structure, err instanceof Missing ? `falta o es inválido: ${err.message}` : `documento ilegible: ${(err as Error).message}`);
  }
  return done();
}
