import { StateMachine } from '../../platform/state-machine.ts';
import type { FlowRunStatus } from './tables.ts';

/** A flow run: created pending with its event, then done once (docs/flows.md). No events of its own. */
export const FLOW_RUN_MACHINE = new StateMachine<FlowRunStatus, 'create' | 'succeed' | 'fail'>('flow_run', [
  { from: null, action: 'create', to: 'pending', events: [] },
  { from: ['pending'], action: 'succeed', to: 'succeeded', events: [] },
  { from: ['pending'], action: 'fail', to: 'failed', events: [] },
]);
