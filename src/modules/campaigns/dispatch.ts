import { sql, type Transaction } from 'kysely';
import type { AppDeps, ServiceScope } from '../../platform/context.ts';
import type { DB } from '../../platform/db/schema.ts';
import { randomToken } from '../../platform/ids.ts';
import { inTenant, type Tenant } from '../../platform/scope.ts';
import { applyTransition } from '../../platform/state-machine.ts';
import { MessagingError, reportMove, type MessageStatus, type RailEnvironment, type StatusDetail } from '../../rails/index.ts';
import { mayContactAt, nextContactWindow } from '../contact-policy/index.ts';
import { findTemplate } from '../templates/service.ts';
import { CAMPAIGN_MACHINE, CAMPAIGN_MESSAGE_MACHINE, WAITING, type CampaignMessageAction } from './lifecycle.ts';
import { nextTokenAt, takeTokens, tokensAvailable } from './pacing.ts';
import { campaignMessageEventData, type CampaignMessageRow, type CampaignRow } from './present.ts';
import { campaignText } from './recipients.ts';
import { campaignSettings } from './settings.ts';
import './tables.ts';

/**
 * The per-sender dispatcher (docs/campaigns.md "Sending"). A sender is a company's messaging
 * identity in one environment. One job at a time is meant to run for it: `campaign_senders.job_token`
 * names it (a job with another token is stale and ends at once). Each run, under the sender's row
 * lock: outside the contact hours it sleeps until the next window; otherwise it takes as many
 * queued messages as the token bucket allows, skipping phones messaged less than the gap ago, and
 * marks them `sending` with its token. It commits, hands them to the messaging rail (outside any
 * transaction; `reference` = the message id), records each answer in a transaction of its own, and
 * schedules the next run for when the bucket or a phone allows more. A run that dies mid-send is
 * run again by the queue with the same token and sends what it took again, with the same
 * reference (the provider sends it once).
 */
export const DISPATCH_JOB = 'campaigns.dispatch';

/** A scheduled run this far overdue is presumed lost (a dead job): a new campaign schedules its own. */
const STALE_RUN_MS = 15 * 60_000;

type SenderRow = { bucket_tat: Date | null; job_token: string | null; wake_at: Date | null };

async function lockSender(trx: Transaction<DB>, scope: Tenant): Promise<SenderRow | undefined> {
  return trx
    .selectFrom('campaign_senders')
    .select(['bucket_tat', 'job_token', 'wake_at'])
    .$call(inTenant(scope))
    .forUpdate()
    .executeTakeFirst() as Promise<SenderRow | undefined>;
}

/** A new run of the sender's dispatcher at `at` (its token supersedes any other job of the sender). */
async function schedule(trx: Transaction<DB>, scope: Tenant & { deps: AppDeps }, at: Date, now: Date, tat?: Date | null): Promise<void> {
  const token = randomToken(24);
  await trx
    .updateTable('campaign_senders')
    .set({ job_token: token, wake_at: at, updated_at: now, ...(tat !== undefined ? { bucket_tat: tat } : {}) })
    .$call(inTenant(scope))
    .execute();
  await scope.deps.jobs.enqueue(
    trx,
    DISPATCH_JOB,
    { company_id: scope.companyId, environment: scope.environment, token },
    at.getTime() > now.getTime() ? at : undefined,
  );
}

/**
 * In the transaction that queued messages: makes sure the sender's dispatcher runs at the next
 * contact window (now, inside the hours). A run already due by then is enough.
 */
export async function wakeSender(trx: Transaction<DB>, scope: ServiceScope, now: Date): Promise<void> {
  const at = nextContactWindow(now);
  await trx
    .insertInto('campaign_senders')
    .values({ company_id: scope.companyId, environment: scope.environment, bucket_tat: null, job_token: null, wake_at: null, updated_at: now })
    .onConflict((oc) => oc.columns(['company_id', 'environment']).doNothing())
    .execute();
  const sender = await lockSender(trx, scope);
  const wake = sender?.wake_at ? new Date(sender.wake_at).getTime() : null;
  if (sender?.job_token && wake !== null && wake <= at.getTime() && wake > now.getTime() - STALE_RUN_MS) return;
  await schedule(trx, scope, at, now);
  scope.notifyWorkers?.();
}

async function moveMessage(
  trx: Transaction<DB>,
  deps: AppDeps,
  scope: Tenant,
  row: CampaignMessageRow,
  action: CampaignMessageAction,
  patch: Partial<CampaignMessageRow>,
): Promise<CampaignMessageRow> {
  const { row: moved } = await applyTransition(trx, { ...scope, db: trx, deps }, CAMPAIGN_MESSAGE_MACHINE, {
    table: 'campaign_messages',
    row,
    action,
    set: () => patch,
    present: async (updated) => campaignMessageEventData(await loadCampaignRow(trx, scope, updated.campaign_id), updated),
  });
  return moved;
}

async function loadCampaignRow(db: Transaction<DB> | AppDeps['database']['db'], scope: Tenant, id: string): Promise<CampaignRow> {
  return db.selectFrom('campaigns').selectAll().$call(inTenant(scope)).where('id', '=', id).executeTakeFirstOrThrow();
}

async function lockMessage(trx: Transaction<DB>, scope: Tenant, id: string): Promise<CampaignMessageRow | undefined> {
  return trx.selectFrom('campaign_messages').selectAll().$call(inTenant(scope)).where('id', '=', id).forUpdate().executeTakeFirst();
}

/** Takes the messages of this run (or the ones a dead run with the same token had taken). */
async function takeMessages(deps: AppDeps, scope: Tenant, token: string): Promise<{ messages: CampaignMessageRow[] } | null> {
  const settings = campaignSettings(deps);
  return deps.database.db.transaction().execute(async (trx) => {
    const sender = await lockSender(trx, scope);
    if (!sender || sender.job_token !== token) return null; // superseded by a newer run
    const now = deps.clock.now();
    const resumed = await trx
      .selectFrom('campaign_messages')
      .selectAll()
      .$call(inTenant(scope))
      .where('status', '=', 'sending')
      .where('dispatch_token', '=', token)
      .orderBy('seq')
      .execute();
    if (resumed.length) return { messages: resumed };
    if (!mayContactAt(now)) {
      // Marketing is held to the contact hours (Ley 2300 de 2023): sleep until the next window.
      await schedule(trx, { ...scope, deps }, nextContactWindow(now), now);
      return null;
    }
    const available = tokensAvailable(sender.bucket_tat ? new Date(sender.bucket_tat) : null, now, settings.rate);
    if (available === 0) return { messages: [] };
    const gapStart = new Date(now.getTime() - settings.phoneGapMs);
    const candidates = await trx
      .selectFrom('campaign_messages as m')
      .selectAll('m')
      .where('m.company_id', '=', scope.companyId)
      .where('m.environment', '=', scope.environment)
      .where('m.status', '=', 'queued')
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('campaign_messages as s')
              .select(sql<number>`1`.as('one'))
              .whereRef('s.company_id', '=', 'm.company_id')
              .whereRef('s.environment', '=', 'm.environment')
              .whereRef('s.recipient', '=', 'm.recipient')
              .where('s.sent_at', '>', gapStart),
          ),
        ),
      )
      .orderBy('m.seq')
      .limit(available * 2)
      .execute();
    // Two campaigns to one phone: only the first goes in this run (the gap holds the other).
    const phones = new Set<string>();
    const picked = candidates.filter((m) => !phones.has(m.recipient) && phones.add(m.recipient)).slice(0, available);
    if (!picked.length) return { messages: [] };
    const { tat } = takeTokens(sender.bucket_tat ? new Date(sender.bucket_tat) : null, now, settings.rate, picked.length);
    await trx.updateTable('campaign_senders').set({ bucket_tat: tat, updated_at: now }).$call(inTenant(scope)).execute();
    const taken: CampaignMessageRow[] = [];
    for (const m of picked) {
      taken.push(await moveMessage(trx, deps, scope, m, 'dispatch', { dispatch_token: token, sent_at: now, attempts: m.attempts + 1 }));
    }
    for (const id of new Set(picked.map((m) => m.campaign_id))) {
      const campaign = await trx.selectFrom('campaigns').selectAll().$call(inTenant(scope)).where('id', '=', id).forUpdate().executeTakeFirst();
      if (campaign && CAMPAIGN_MACHINE.find(campaign.status, 'start')) {
        await applyTransition(trx, { ...scope, db: trx, deps }, CAMPAIGN_MACHINE, { table: 'campaigns', row: campaign, action: 'start' });
      }
    }
    return { messages: taken };
  });
}

type SendOutcome = { ok: true; providerMessageId: string } | { ok: false; retryable: boolean; reason: string };

/** Hands one message to the company's messaging rail (outside any transaction). */
async function sendOne(deps: AppDeps, scope: Tenant, message: CampaignMessageRow, companyName: string): Promise<SendOutcome> {
  try {
    const campaign = await loadCampaignRow(deps.database.db, scope, message.campaign_id);
    const template = await findTemplate(deps.database.db, campaign.template_id);
    if (!template) return { ok: false, retryable: false, reason: `template ${campaign.template_id} no longer exists` };
    const variables: Record<string, string> = {};
    const known: Record<string, string> = {
      company_name: companyName,
      optional_1: campaign.optional_1 ?? '',
      optional_2: campaign.optional_2 ?? '',
      optional_3: campaign.optional_3 ?? '',
    };
    for (const [, name] of template.body.matchAll(/\{\{\s*([a-z0-9_]+)\s*\}\}/gi)) variables[name] = known[name] ?? '';
    // The media rides with the template's variables: a template provider attaches it as the header.
    variables[campaign.media_type === 'video' ? 'video_url' : 'image_url'] = campaign.media_url;
    const sent = await deps.rails.contact(scope).messaging.send({
      to: message.recipient,
      text: campaignText(template.body, known, campaign.media_url),
      template: template.name,
      variables,
      reference: message.id,
    });
    return { ok: true, providerMessageId: sent.providerMessageId };
  } catch (error) {
    if (error instanceof MessagingError) return { ok: false, retryable: error.retryable, reason: `${error.code}: ${error.message}` };
    // Anything else (a bug, the rail closing at shutdown) is retried.
    return { ok: false, retryable: true, reason: error instanceof Error ? error.message : String(error) };
  }
}

/** Records the rail's answer about one message, in a transaction of its own. */
async function settleSend(deps: AppDeps, scope: Tenant, id: string, outcome: SendOutcome): Promise<boolean> {
  const settings = campaignSettings(deps);
  return deps.database.db.transaction().execute(async (trx) => {
    const row = await lockMessage(trx, scope, id);
    if (!row) return false;
    if (row.status !== 'sending') {
      // A report came first (the sandbox answers at once): keep it, note the provider's id.
      if (outcome.ok && !row.provider_message_id) {
        await trx
          .updateTable('campaign_messages')
          .set({ provider_message_id: outcome.providerMessageId })
          .$call(inTenant(scope))
          .where('id', '=', id)
          .execute();
      }
      return false;
    }
    if (outcome.ok) {
      await moveMessage(trx, deps, scope, row, 'hand_over', { provider_message_id: outcome.providerMessageId, error: null });
      return false;
    }
    if (outcome.retryable && row.attempts < settings.maxSendAttempts) {
      await moveMessage(trx, deps, scope, row, 'requeue', { error: outcome.reason });
      return false;
    }
    const reason = outcome.retryable ? `gave up after ${row.attempts} attempts: ${outcome.reason}` : outcome.reason;
    await moveMessage(trx, deps, scope, row, 'fail', { error: reason });
    return true;
  });
}

/**
 * After the sends: completes the campaigns with nothing left to hand over and schedules the next
 * run (the next token, or when a held phone is free), or leaves the sender idle.
 */
async function finishRun(deps: AppDeps, scope: Tenant, token: string, campaignIds: string[], tookNone: boolean): Promise<void> {
  const settings = campaignSettings(deps);
  await deps.database.db.transaction().execute(async (trx) => {
    const sender = await lockSender(trx, scope);
    if (!sender || sender.job_token !== token) return;
    const now = deps.clock.now();
    for (const id of campaignIds) await completeIfDone(trx, deps, scope, id, now);
    const head = await trx
      .selectFrom('campaign_messages')
      .select('recipient')
      .$call(inTenant(scope))
      .where('status', '=', 'queued')
      .orderBy('seq')
      .limit(50)
      .execute();
    if (!head.length) {
      await trx.updateTable('campaign_senders').set({ job_token: null, wake_at: null, updated_at: now }).$call(inTenant(scope)).execute();
      return;
    }
    const tat = sender.bucket_tat ? new Date(sender.bucket_tat) : null;
    let next = nextTokenAt(tat, now, settings.rate);
    if (tookNone && tokensAvailable(tat, now, settings.rate) > 0) {
      // Every queued phone had a message less than the gap ago: wake when the first one is free.
      const last = await trx
        .selectFrom('campaign_messages')
        .select(sql<Date | null>`min(sent_at)`.as('first'))
        .$call(inTenant(scope))
        .where(
          'recipient',
          'in',
          head.map((h) => h.recipient),
        )
        .where('sent_at', '>', new Date(now.getTime() - settings.phoneGapMs))
        .executeTakeFirst();
      const first = last?.first ? new Date(last.first).getTime() : now.getTime();
      next = new Date(Math.max(next.getTime(), first + settings.phoneGapMs));
    }
    await schedule(trx, { ...scope, deps }, nextContactWindow(next), now);
  });
}

/** A campaign none of whose messages waits any more (all handed over, failed or cancelled) is completed. */
async function completeIfDone(trx: Transaction<DB>, deps: AppDeps, scope: Tenant, id: string, now: Date): Promise<void> {
  const campaign = await trx.selectFrom('campaigns').selectAll().$call(inTenant(scope)).where('id', '=', id).forUpdate().executeTakeFirst();
  if (!campaign || !CAMPAIGN_MACHINE.find(campaign.status, 'complete')) return;
  const waiting = await trx
    .selectFrom('campaign_messages')
    .select('id')
    .$call(inTenant(scope))
    .where('campaign_id', '=', id)
    .where('status', 'in', WAITING)
    .limit(1)
    .executeTakeFirst();
  if (waiting) return;
  await applyTransition(trx, { ...scope, db: trx, deps }, CAMPAIGN_MACHINE, {
    table: 'campaigns',
    row: campaign,
    action: 'complete',
    set: () => ({ completed_at: now }),
  });
}

/** The `campaigns.dispatch` job: one run of a sender's dispatcher. */
export async function runCampaignDispatch(deps: AppDeps, payload: Record<string, unknown>): Promise<void> {
  const scope: Tenant = { companyId: String(payload.company_id), environment: payload.environment === 'live' ? 'live' : 'test' };
  const token = String(payload.token);
  const taken = await takeMessages(deps, scope, token);
  if (!taken) return;
  const { messages } = taken;
  let emitted = false;
  if (messages.length) {
    const company = await deps.database.db.selectFrom('companies').select('name').where('id', '=', scope.companyId).executeTakeFirstOrThrow();
    const outcomes = await Promise.all(messages.map((m) => sendOne(deps, scope, m, company.name)));
    for (const [i, m] of messages.entries()) {
      if (await settleSend(deps, scope, m.id, outcomes[i])) emitted = true;
    }
  }
  await finishRun(deps, scope, token, [...new Set(messages.map((m) => m.campaign_id))], messages.length === 0);
  if (emitted) deps.jobs.wake(); // webhook deliveries of the new events
}

/**
 * A provider's report about a campaign message (rails.onMessageStatus, every process): found by
 * its reference (the message id) or else by the provider's id; moves it and emits
 * `payment.message.<status>` in one transaction, with the same guards as a payment's messages: a
 * repeated or late delivered/failed moves nothing, a reply is new unless its text and time equal
 * the last one. A report for no campaign message is left to the other listeners.
 */
export async function applyCampaignMessageStatus(
  deps: AppDeps,
  providerMessageId: string,
  status: MessageStatus,
  detail: StatusDetail,
  environment: RailEnvironment,
): Promise<void> {
  const db = deps.database.db;
  let q = db.selectFrom('campaign_messages').select(['company_id', 'id']).where('environment', '=', environment);
  q = detail.reference ? q.where('id', '=', detail.reference) : q.where('provider_message_id', '=', providerMessageId);
  const found = await q.executeTakeFirst();
  if (!found) return;
  const scope: Tenant = { companyId: found.company_id, environment };
  let emitted = false;
  await db.transaction().execute(async (trx) => {
    const row = await lockMessage(trx, scope, found.id);
    if (!row) return;
    // Only a message handed over (sending or sent) takes delivered or failed.
    const move = reportMove(
      row,
      status,
      detail,
      providerMessageId,
      (action) => (action === 'reply' || row.status !== 'queued') && !!CAMPAIGN_MESSAGE_MACHINE.find(row.status, action),
    );
    if (!move) return;
    await moveMessage(trx, deps, scope, row, move.action, move.patch);
    emitted = true;
  });
  if (emitted) deps.jobs.wake();
}

/** The dispatcher job and the status listener; registered in every process (API and workers). */
export function registerCampaignHandlers(deps: AppDeps): void {
  deps.jobs.register(DISPATCH_JOB, (payload) => runCampaignDispatch(deps, payload));
  deps.rails.onMessageStatus((providerMessageId, status, detail, environment) =>
    applyCampaignMessageStatus(deps, providerMessageId, status, detail, environment),
  );
}
