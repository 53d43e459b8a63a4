import { StateMachine } from '../../platform/state-machine.ts';
import type { OnboardingStatus } from './tables.ts';

/**
 * A platform's onboarding of a company (docs/companies.md): pending → in_review → active |
 * rejected, moved by the operator (`recaudo companies review`). No events (docs/companies.md).
 */
export type OnboardingAction = 'create' | 'review' | 'approve' | 'reject';
export const ONBOARDING_MACHINE = new StateMachine<OnboardingStatus, OnboardingAction>('company_onboarding', [
  { from: null, action: 'create', to: 'pending', events: [] },
  { from: ['pending'], action: 'review', to: 'in_review', events: [] },
  { from: ['in_review'], action: 'approve', to: 'active', events: [] },
  { from: ['pending', 'in_review'], action: 'reject', to: 'rejected', events: [] },
]);
