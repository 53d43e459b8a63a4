/**
 * Disputes reported by a money rail (docs/disputes.md "The rail's part"). A dispute (chargeback)
 * is opened by the card network or the payer's bank, never by Recaudo: the rail reports it on a
 * reference it settled (a charge id, a payment attempt's id) and later reports how it closed. The
 * disputes module takes both reports through one entry (openDisputeFromRail, closeDisputeFromRail).
 *
 * A real connector hands its provider's dispute notices to that entry from its inbound events.
 * The sandbox adapters answer `openDispute` / `closeDispute` when a test asks (the test helpers
 * POST /charges/{id}/dispute, POST /payments/{id}/dispute, POST /disputes/{id}/resolve): the
 * report is deterministic from the request, so asking again gives the same dispute.
 */

/** Why the payer disputes (the networks' reason families, named as Stripe names them). */
export const DISPUTE_REASONS = [
  'fraudulent',
  'unrecognized',
  'duplicate',
  'product_not_received',
  'product_unacceptable',
  'credit_not_processed',
  'subscription_canceled',
  'general',
] as const;
export type DisputeReason = (typeof DISPUTE_REASONS)[number];

export type DisputeOutcome = 'won' | 'lost';

export interface DisputeRequest {
  /** The rail's reference of the settled money: the charge id, or the payment attempt's id. */
  reference: string;
  /** Minor units, at most what was settled under the reference. */
  amount: bigint;
  currency: string;
  reason: DisputeReason;
}

/** A dispute as the rail reports it. */
export interface DisputeReport extends DisputeRequest {
  /** The rail's own id of the dispute: the same dispute reported twice has the same id. */
  railDisputeId: string;
}

export interface DisputeClosing {
  railDisputeId: string;
  outcome: DisputeOutcome;
}

/**
 * What a rail that carries disputes offers. Optional on every port: a connector without it reports
 * disputes only through its inbound events, and the sandbox helpers answer 422 for its charges.
 */
export interface DisputeReporting {
  /** Sandbox: the network opens a dispute on `reference` now (a test asked for one). */
  openDispute?(request: DisputeRequest): Promise<DisputeReport>;
  /** Sandbox: the network decides the dispute `railDisputeId` (a test asked for it). */
  closeDispute?(railDisputeId: string, outcome: DisputeOutcome): Promise<DisputeClosing>;
}

/** The sandbox's dispute reports: deterministic (one dispute per reference), nothing kept in memory. */
export const sandboxDisputes: Required<DisputeReporting> = {
  async openDispute(request) {
    return { ...request, railDisputeId: `sbx_dp_${request.reference}` };
  },
  async closeDispute(railDisputeId, outcome) {
    return { railDisputeId, outcome };
  },
};
