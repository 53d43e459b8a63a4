import { StateMachine } from '../../platform/state-machine.ts';
import type { ResolutionStatus } from './tables.ts';

/**
 * A numbering resolution's lifecycle (docs/invoicing.md "Resolutions"): drafted, activated (which
 * retires the active one of its prefix and document type), retired; a retired one may be activated
 * again. Its events (expiring, exhausted alerts) come from its folios, not from these moves.
 */
export const RESOLUTION_MACHINE = new StateMachine<ResolutionStatus, 'create' | 'provision' | 'activate' | 'retire'>('fiscal_resolution', [
  { from: null, action: 'create', to: 'draft', events: [] },
  // The test environment's default resolutions (DIAN's habilitación range) are created in use.
  { from: null, action: 'provision', to: 'active', events: [] },
  { from: ['draft', 'retired'], action: 'activate', to: 'active', events: [] },
  { from: ['active'], action: 'retire', to: 'retired', events: [] },
]);
