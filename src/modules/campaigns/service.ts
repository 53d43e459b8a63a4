import { sql } from 'kysely';
import type { RequestContext } from '../../platform/context.ts';
import { inTransaction } from '../../platform/db/database.ts';
import { ApiError, validationError, type FieldErrors } from '../../platform/errors/api-error.ts';
import { prefixedId } from '../../platform/ids.ts';
import { paginate, parseListQuery } from '../../platform/lists/lists.ts';
import { inTenant, loadInScope } from '../../platform/scope.ts';
import { applyTransition, insertWithTransition } from '../../platform/state-machine.ts';
import { companyHasFeature } from '../companies/service.ts';
import { findSelectableTemplate, type TemplateRow } from '../templates/service.ts';
import { CAMPAIGN_MACHINE, CAMPAIGN_MESSAGE_MACHINE } from './lifecycle.ts';
import { fetchCampaignMedia } from './media.ts';
import type { JudgedMedia, MediaType } from './media-rules.ts';
import { orderedOptionals, splitPhones, type RejectedPhone } from './recipients.ts';
import { wakeSender } from './dispatch.ts';
import { campaignList, campaignMessageList, type CampaignDetailResponse, type ImportMessagesBody, type ImportMessagesResponse } from './schemas.ts';
import { toCampaignMessageResponse, toCampaignResponse, type CampaignMessageRow, type CampaignRow } from './present.ts';
import { CAMPAIGN_MESSAGE_STATUSES } from './tables.ts';
import './tables.ts';

/** SPEC.md: campaigns need the company's `campaigns` feature; without it 403 (no code). */
export async function requireCampaignsFeature(ctx: RequestContext): Promise<void> {
  if (!(await companyHasFeature(ctx.deps.database.db, ctx.companyId, 'campaigns'))) throw new ApiError('feature_disabled');
}

/** Everything the request's rules decided before its transaction: what createCampaign records. */
export interface PreparedCampaign {
  template: TemplateRow;
  type: MediaType;
  media: JudgedMedia & { url: string };
  recipients: string[];
  rejected: RejectedPhone[];
  optionals: (string | null)[];
}

/**
 * The rules of POST /campaigns/import-messages that need no transaction, in the order a caller
 * fixes them: template, phones, optionals and the media field (all reported together), then the
 * media itself, fetched once (up to the media deadline; never inside a transaction).
 */
export async function prepareCampaign(ctx: RequestContext, body: ImportMessagesBody): Promise<PreparedCampaign> {
  const errors: FieldErrors = {};
  const template = await findSelectableTemplate(ctx.deps.database.db, body.template);
  if (!template) errors.template = ['must be the id or the name of a template with selectable true (GET /v1/templates)'];
  const { recipients, rejected } = splitPhones(body.phones);
  if (recipients.length === 0) errors.phones = ['no phone is a valid E.164 number (such as +573001234567)'];
  const { errors: gaps, optionals } = orderedOptionals([body.optional_1, body.optional_2, body.optional_3]);
  Object.assign(errors, gaps);
  const type: MediaType = body.type === 'video' ? 'video' : 'image';
  const field = type === 'video' ? 'video_url' : 'image_url';
  const url = type === 'video' ? body.video_url : body.image_url;
  if (!url) errors[field] = [type === 'video' ? 'is required when type is video' : 'is required (or send type video with video_url)'];
  if (Object.keys(errors).length) throw validationError(errors);
  const media = await fetchCampaignMedia(ctx.deps, ctx.environment, type, field, url!);
  return { template: template!, type, media, recipients, rejected, optionals };
}

const INSERT_CHUNK = 500;

/**
 * Records the campaign and one queued message per recipient in the request's transaction, and
 * makes sure the sender's dispatcher runs (at the next contact window: a campaign is marketing).
 */
export async function createCampaign(ctx: RequestContext, prepared: PreparedCampaign | undefined): Promise<ImportMessagesResponse> {
  if (!prepared) throw new Error('campaign not prepared before the transaction (prepareCampaign)');
  const now = ctx.deps.clock.now();
  return inTransaction(ctx.db, async (trx) => {
    const scope = { ...ctx, db: trx };
    const campaign = await insertWithTransition<CampaignRow>(trx, scope, CAMPAIGN_MACHINE, {
      table: 'campaigns',
      action: 'create',
      values: {
        id: prefixedId('camp', now.getTime()),
        template_id: prepared.template.id,
        media_type: prepared.type,
        media_url: prepared.media.url,
        media_content_type: prepared.media.contentType,
        media_bytes: prepared.media.bytes,
        media_width: prepared.media.width,
        media_height: prepared.media.height,
        optional_1: prepared.optionals[0],
        optional_2: prepared.optionals[1],
        optional_3: prepared.optionals[2],
        recipients: prepared.recipients.length,
        rejected: JSON.stringify(prepared.rejected),
        created_at: now,
        updated_at: now,
      },
    });
    // Creation emits nothing: a set-based insert with the machine's initial status.
    const status = CAMPAIGN_MESSAGE_MACHINE.initial('create');
    for (let i = 0; i < prepared.recipients.length; i += INSERT_CHUNK) {
      await trx
        .insertInto('campaign_messages')
        .values(
          prepared.recipients.slice(i, i + INSERT_CHUNK).map((recipient) => ({
            company_id: ctx.companyId,
            environment: ctx.environment,
            id: prefixedId('cmsg', now.getTime()),
            campaign_id: campaign.id,
            recipient,
            status,
            created_at: now,
            updated_at: now,
          })),
        )
        .execute();
    }
    await wakeSender(trx, scope, now);
    return { id: campaign.id, status: 'queued' as const, recipients: campaign.recipients, rejected: prepared.rejected };
  });
}

/** A campaign of the caller's company by id: missing → 404; the other environment → environment_key_mismatch. */
async function loadCampaign(ctx: RequestContext, id: string): Promise<CampaignRow> {
  if (id.length > 100) throw new ApiError('record_not_found');
  return loadInScope(ctx, (scoped) => ctx.db.selectFrom('campaigns').selectAll().$call(scoped).where('id', '=', id).executeTakeFirst());
}

async function withCounts(ctx: RequestContext, row: CampaignRow, db = ctx.db): Promise<CampaignDetailResponse> {
  const rows = await db
    .selectFrom('campaign_messages')
    .select(['status', sql<string>`count(*)`.as('n')])
    .$call(inTenant(ctx))
    .where('campaign_id', '=', row.id)
    .groupBy('status')
    .execute();
  const counts = Object.fromEntries(CAMPAIGN_MESSAGE_STATUSES.map((s) => [s, 0])) as CampaignDetailResponse['counts'];
  for (const r of rows) counts[r.status] = Number(r.n);
  return { ...toCampaignResponse(row), counts };
}

export async function getCampaign(ctx: RequestContext, id: string): Promise<CampaignDetailResponse> {
  return withCounts(ctx, await loadCampaign(ctx, id));
}

/** GET /campaigns: filters id, status, template_id; newest first (the list envelope). */
export async function listCampaigns(ctx: RequestContext, query: Record<string, unknown>, path: string) {
  const list = parseListQuery(campaignList, query);
  let q = ctx.db.selectFrom('campaigns').selectAll().$call(inTenant(ctx));
  const f = list.filters;
  if (f.id !== undefined) q = q.where('id', '=', f.id);
  if (f.status !== undefined) q = q.where('status', '=', f.status as CampaignRow['status']);
  if (f.template_id !== undefined) q = q.where('template_id', '=', f.template_id);
  return paginate(q, list, { path, query, table: 'campaigns', map: toCampaignResponse });
}

/** GET /campaigns/{id}/messages: filters status, recipient; newest first (the list envelope). */
export async function listCampaignMessages(ctx: RequestContext, id: string, query: Record<string, unknown>, path: string) {
  const campaign = await loadCampaign(ctx, id);
  const list = parseListQuery(campaignMessageList, query);
  let q = ctx.db.selectFrom('campaign_messages').selectAll().$call(inTenant(ctx)).where('campaign_id', '=', campaign.id);
  const f = list.filters;
  if (f.status !== undefined) q = q.where('status', '=', f.status as CampaignMessageRow['status']);
  if (f.recipient !== undefined) q = q.where('recipient', '=', f.recipient);
  return paginate(q, list, { path, query, table: 'campaign_messages', map: toCampaignMessageResponse });
}

/**
 * POST /campaigns/{id}/cancel: the messages not handed to the provider yet are cancelled (a
 * message the dispatcher is handing over at this moment goes); the others keep their status. A
 * cancelled campaign answers as it is; a completed one is 422 campaign_not_cancellable.
 */
export async function cancelCampaign(ctx: RequestContext, id: string): Promise<CampaignDetailResponse> {
  return inTransaction(ctx.db, async (trx) => {
    const found = await loadCampaign({ ...ctx, db: trx }, id);
    const row = await trx.selectFrom('campaigns').selectAll().$call(inTenant(ctx)).where('id', '=', found.id).forUpdate().executeTakeFirstOrThrow();
    if (row.status === 'cancelled') return withCounts(ctx, row, trx);
    if (!CAMPAIGN_MACHINE.find(row.status, 'cancel')) throw new ApiError('campaign_not_cancellable');
    const now = ctx.deps.clock.now();
    const { row: cancelled } = await applyTransition(trx, { ...ctx, db: trx }, CAMPAIGN_MACHINE, {
      table: 'campaigns',
      row,
      action: 'cancel',
      set: () => ({ cancelled_at: now }),
    });
    const move = CAMPAIGN_MESSAGE_MACHINE.batch('cancel');
    await trx
      .updateTable('campaign_messages')
      .set({ status: move.to, updated_at: now })
      .$call(inTenant(ctx))
      .where('campaign_id', '=', row.id)
      .where('status', 'in', move.from)
      .execute();
    return withCounts(ctx, cancelled, trx);
  });
}
