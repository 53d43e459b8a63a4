import type { Clock } from '../platform/clock.ts';
import { BILL_PENDING_SETTLE_MS, sandboxBillAmount, sandboxBillClass } from './sandbox-table.ts';

/**
 * Bill payments (rail `biller`, docs/utilities.md, docs/rails.md): the network of billers
 * ("convenios": energy, water, gas, telecom companies) a company pays its customers' bills through,
 * from its own balance. Every call happens outside a database transaction; `pay` is idempotent by
 * `reference` (the utility id): sending it again answers where that payment stands and never pays
 * twice.
 */
export type BillerCategory = 'energy' | 'water' | 'gas' | 'telecom' | 'internet' | 'television' | 'sanitation';

export interface BillerProvider {
  /** The biller's code at the rail (a convenio code). */
  id: string;
  name: string;
  category: BillerCategory;
  /** Where the payer finds the reference on the bill. */
  helpText: string;
}

export interface Bill {
  providerId: string;
  reference: string;
  /** Minor units. */
  amount: bigint;
  currency: 'COP';
  /** YYYY-MM-DD, Colombian calendar. */
  dueDate: string;
  /** The bill's holder as the biller shows it (masked). */
  holderName: string;
  /** Paid already (at the biller, by anyone). */
  paid: boolean;
}

export type BillInquiry = { status: 'found'; bill: Bill } | { status: 'not_found' };

export interface BillPaymentRequest {
  /** The utility id: the rail's idempotency key. */
  reference: string;
  providerId: string;
  billReference: string;
  amount: bigint;
  currency: 'COP';
  /** When the payment was first sent (the sandbox times a pending answer from it). */
  submittedAt: Date;
}

export type BillPaymentOutcome =
  | { status: 'paid'; networkId: string }
  | { status: 'rejected'; networkId: string; remarks: string }
  /** Not final yet: ask again at `settleAt` (null: every hour). */
  | { status: 'pending'; networkId: string; settleAt: Date | null };

export interface BillerPort {
  readonly name: string;
  providers(): Promise<BillerProvider[]>;
  /** The bill of `reference` at `providerId` (a read: nothing is paid). */
  inquire(providerId: string, reference: string): Promise<BillInquiry>;
  /** Pays the bill, or answers where the payment of this reference stands (never a second one). */
  pay(request: BillPaymentRequest): Promise<BillPaymentOutcome>;
}

/** The sandbox biller's seeded providers: Colombian-style convenios, fictitious companies and codes. */
export const SANDBOX_BILLERS: readonly BillerProvider[] = [
  {
    id: '7701001',
    name: 'Energía de la Sabana S.A. E.S.P.',
    category: 'energy',
    helpText: 'Número de cuenta (contrato), arriba a la derecha de la factura.',
  },
  {
    id: '7701002',
    name: 'Electrificadora del Caribe Norte S.A. E.S.P.',
    category: 'energy',
    helpText: 'NIC de 7 a 12 dígitos, junto al código de barras.',
  },
  {
    id: '7702001',
    name: 'Acueducto y Alcantarillado del Valle S.A. E.S.P.',
    category: 'water',
    helpText: 'Número de matrícula o contrato, en el recuadro "Datos del suscriptor".',
  },
  { id: '7702002', name: 'Aguas de los Andes S.A. E.S.P.', category: 'water', helpText: 'Referencia de pago de 10 a 14 dígitos.' },
  { id: '7703001', name: 'Gases del Pacífico S.A. E.S.P.', category: 'gas', helpText: 'Número de cuenta contrato, debajo del nombre del titular.' },
  { id: '7704001', name: 'Telecomunicaciones Cóndor S.A.', category: 'telecom', helpText: 'Número de la línea o cuenta de facturación.' },
  { id: '7705001', name: 'Red Fibra Colombia S.A.S.', category: 'internet', helpText: 'Código de cliente de 8 a 12 dígitos.' },
  { id: '7706001', name: 'Televisión Satelital Andina S.A.', category: 'television', helpText: 'Número de suscriptor.' },
  { id: '7707001', name: 'Aseo Metropolitano del Norte S.A. E.S.P.', category: 'sanitation', helpText: 'Referencia de pago del servicio de aseo.' },
];

const BOGOTA_OFFSET_MS = 5 * 3_600_000;

/**
 * The sandbox biller (docs/testing.md "Utilities"): a bill exists for every reference of 6 to 16
 * digits (no other), and answers deterministically by the reference's last four characters — `0404` not found, `1111` already paid, `0000` unpaid but the
 * payment is rejected, `2222` paid a minute after it is sent, anything else paid at once. The
 * amount is 100 pesos × the last four digits (at least COP 5,000); the due date is the 20th of the
 * current Colombian month.
 */
export class SandboxBiller implements BillerPort {
  readonly name = 'sandbox';
  constructor(private readonly opts: { clock: Clock }) {}

  async providers(): Promise<BillerProvider[]> {
    return [...SANDBOX_BILLERS];
  }

  async inquire(providerId: string, reference: string): Promise<BillInquiry> {
    if (!SANDBOX_BILLERS.some((p) => p.id === providerId)) return { status: 'not_found' };
    const kind = sandboxBillClass(reference);
    if (kind === 'not_found') return { status: 'not_found' };
    const local = new Date(this.opts.clock.now().getTime() - BOGOTA_OFFSET_MS);
    const dueDate = `${local.getUTCFullYear()}-${String(local.getUTCMonth() + 1).padStart(2, '0')}-20`;
    return {
      status: 'found',
      bill: {
        providerId,
        reference,
        amount: sandboxBillAmount(reference),
        currency: 'COP',
        dueDate,
        holderName: 'Ana G*** R***',
        paid: kind === 'already_paid',
      },
    };
  }

  async pay(request: BillPaymentRequest): Promise<BillPaymentOutcome> {
    const networkId = `sbx_bill_${request.reference}`;
    const kind = sandboxBillClass(request.billReference);
    if (kind === 'rejected') return { status: 'rejected', networkId, remarks: 'REJECTED_BY_BILLER' };
    if (kind === 'already_paid') return { status: 'rejected', networkId, remarks: 'BILL_ALREADY_PAID' };
    if (kind === 'not_found') return { status: 'rejected', networkId, remarks: 'BILL_NOT_FOUND' };
    if (kind === 'pending') {
      const settleAt = new Date(request.submittedAt.getTime() + BILL_PENDING_SETTLE_MS);
      if (this.opts.clock.now().getTime() < settleAt.getTime()) return { status: 'pending', networkId, settleAt };
    }
    return { status: 'paid', networkId };
  }
}
