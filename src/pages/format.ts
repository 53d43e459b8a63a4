import { formatAmount, formatDateTime } from '../rails/messages.ts';

/**
 * Minor units → the amount as a Colombian payer reads it: `$ 150.000`, `US$ 20,50`, with a
 * no-break space after the symbol so a narrow screen never splits it.
 */
export function money(minor: bigint, currency: string): string {
  return formatAmount(pesosText(minor), currency).replace(' ', '\u00a0');
}

/** Minor units → a decimal text in pesos (`150000.00`), exact. */
export function pesosText(minor: bigint): string {
  return `${minor / 100n}.${(minor % 100n).toString().padStart(2, '0')}`;
}

export function when(at: Date | string): string {
  return formatDateTime(at instanceof Date ? at : new Date(at));
}

export const METHOD_NAMES: Record<string, string> = {
  card: 'Tarjeta de crédito o débito',
  banklink: 'Transferencia bancaria',
  rtkey: 'Llave o código QR',
  walleta: 'Billetera A',
  walletb: 'Billetera B',
  sandbox: 'Simulación de pruebas',
};

export const STATUS_NAMES: Record<string, string> = {
  pending: 'Pendiente de pago',
  in_progress: 'Pago en proceso',
  declined: 'Pendiente (último intento rechazado)',
  approved: 'Pagado',
  paid_externally: 'Pagado',
  cancelled: 'Cancelado',
  expired: 'Vencido',
  refunded: 'Reembolsado',
  disputed: 'En revisión',
  partially_paid: 'Pago parcial',
};
