import { StateMachine } from '../../platform/state-machine.ts';
import type { IssuingCardStatus } from './tables.ts';

/**
 * The issuing card machine (docs/issuing.md), applied by the platform's engine. SPEC.md's event
 * table has no issuing events, so no row emits one. `created` waits for the issuer's answer:
 * `activate` (issued: last 4 digits, brand, expiry) or `reject` (the issuer refused it: remarks).
 * `block` and `unblock` move between active and blocked; `cancel` is final.
 */
export const ISSUING_CARD_ACTIONS = ['create', 'activate', 'reject', 'block', 'unblock', 'cancel'] as const;
export type IssuingCardAction = (typeof ISSUING_CARD_ACTIONS)[number];

export const ISSUING_CARD_MACHINE = new StateMachine<IssuingCardStatus, IssuingCardAction>('issuing_card', [
  { from: null, action: 'create', to: 'created', events: [] },
  { from: ['created'], action: 'activate', to: 'active', events: [] },
  { from: ['created'], action: 'reject', to: 'canceled', events: [] },
  { from: ['active'], action: 'block', to: 'blocked', events: [] },
  { from: ['blocked'], action: 'unblock', to: 'active', events: [] },
  { from: ['active', 'blocked'], action: 'cancel', to: 'canceled', events: [] },
]);

/** The actions a company asks for by route (POST /issuing/cards/{id}/{action}). */
export const CARD_ROUTE_ACTIONS = ['block', 'unblock', 'cancel'] as const;
export type CardRouteAction = (typeof CARD_ROUTE_ACTIONS)[number];
