import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { AppDeps } from '../../platform/context.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { ApiError, validationError } from '../../platform/errors/api-error.ts';
import { checkWebhookUrl } from '../webhooks/service.ts';
import { addressPolicy, isPublicAddress, publicOnlyLookup, urlHost } from '../webhooks/url-safety.ts';
import { readMediaHeader } from './media-header.ts';
import { IMAGE_MAX_BYTES, judgeMedia, VIDEO_MAX_BYTES, type JudgedMedia, type MediaType } from './media-rules.ts';
import { campaignSettings } from './settings.ts';

/**
 * The campaign's image or video, fetched once before anything is recorded (never inside a
 * transaction: it runs in the route's preValidation, before the request's transaction opens), and
 * judged from its bytes. The URL follows the webhook URL rules of the key's environment (live:
 * https and public addresses only, the connection pinned to a checked address; test: as
 * ALLOW_PRIVATE_WEBHOOKS says), and so does every redirect.
 */

const USER_AGENT = 'Recaudo-Media/1 (+campaigns)';

type FetchOutcome = { ok: true; bytes: Buffer } | { ok: false; tooLarge: true } | { ok: false; tooLarge?: false; reason: string };

function unreachable(field: string, url: string, reason: string): ApiError {
  return new ApiError('media_unreachable', {
    message: `The media at ${field} could not be fetched: ${reason}.`,
    errors: { [field]: [`could not be fetched: ${reason}`] },
  });
}

/** One GET of `url`, bounded by `deadline` (absolute ms) and `maxBytes` (reading stops past it). */
function getOnce(url: URL, guarded: boolean, deadline: number, timeoutMs: number, maxBytes: number): Promise<FetchOutcome | { redirect: string }> {
  return new Promise((resolve) => {
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    let req: http.ClientRequest | undefined;
    const finish = (outcome: FetchOutcome | { redirect: string }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req?.destroy();
      resolve(outcome);
    };
    const host = urlHost(url);
    // An address in the URL is connected to without a lookup: publicOnlyLookup never sees it.
    if (guarded && net.isIP(host) && !isPublicAddress(host)) return finish({ ok: false, reason: `${host} is not a public address` });
    const left = deadline - Date.now();
    if (left <= 0) return finish({ ok: false, reason: `no complete answer within ${timeoutMs} ms` });
    timer = setTimeout(() => finish({ ok: false, reason: `no complete answer within ${timeoutMs} ms` }), left);
    const client = url.protocol === 'https:' ? https : http;
    try {
      req = client.request(url, {
        method: 'GET',
        headers: { 'user-agent': USER_AGENT, accept: 'image/jpeg, image/png, video/mp4, */*;q=0.1' },
        ...(guarded ? { lookup: publicOnlyLookup } : {}),
        agent: false,
      });
    } catch (error) {
      return finish({ ok: false, reason: (error as Error).message });
    }
    req.on('error', (err: NodeJS.ErrnoException) => finish({ ok: false, reason: err.code ? `${err.code}` : err.message }));
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location) return finish({ redirect: res.headers.location });
      if (status < 200 || status >= 300) return finish({ ok: false, reason: `the server answered ${status}` });
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) return finish({ ok: false, tooLarge: true });
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) return finish({ ok: false, tooLarge: true }); // stop reading past the cap
        chunks.push(chunk);
      });
      res.on('end', () => finish({ ok: true, bytes: Buffer.concat(chunks, size) }));
      res.on('error', (err: NodeJS.ErrnoException) => finish({ ok: false, reason: err.code ?? err.message }));
      res.on('aborted', () => finish({ ok: false, reason: 'the answer was cut off' }));
    });
    req.end();
  });
}

/**
 * Fetches and judges the campaign media of `field` (image_url or video_url). Throws 422
 * validation_error on the field for a URL or a file that breaks a rule, and 422 media_unreachable
 * (with the field) when it cannot be fetched: refused, timed out, a non-2xx answer.
 */
export async function fetchCampaignMedia(
  deps: AppDeps,
  environment: Environment,
  type: MediaType,
  field: 'image_url' | 'video_url',
  rawUrl: string,
): Promise<JudgedMedia & { url: string }> {
  const settings = campaignSettings(deps);
  const maxBytes = type === 'video' ? VIDEO_MAX_BYTES : IMAGE_MAX_BYTES;
  const guarded = addressPolicy(deps.config, environment) === 'public';
  const deadline = Date.now() + settings.mediaTimeoutMs;
  let url = rawUrl;
  for (let hop = 0; ; hop++) {
    // The webhook URL rules of the environment (shape, https with live keys, public addresses).
    const checked = await checkWebhookUrl(deps, environment, url);
    if (checked.problem) {
      if (hop === 0) throw validationError({ [field]: [checked.problem] });
      throw unreachable(field, rawUrl, `it redirects to a URL that ${checked.problem}`);
    }
    const outcome = await getOnce(new URL(url), guarded, deadline, settings.mediaTimeoutMs, maxBytes);
    if ('redirect' in outcome) {
      if (hop >= settings.mediaMaxRedirects) throw unreachable(field, rawUrl, `more than ${settings.mediaMaxRedirects} redirects`);
      try {
        url = new URL(outcome.redirect, url).toString();
      } catch {
        throw unreachable(field, rawUrl, 'it redirects to an invalid URL');
      }
      continue;
    }
    if (!outcome.ok) {
      if (outcome.tooLarge) throw validationError({ [field]: [`must be at most ${maxBytes / (1024 * 1024)} MB`] });
      throw unreachable(field, rawUrl, outcome.reason);
    }
    const judged = judgeMedia(type, readMediaHeader(outcome.bytes), outcome.bytes.length);
    if ('problems' in judged) throw validationError({ [field]: judged.problems });
    return { ...judged.media, url: rawUrl };
  }
}
