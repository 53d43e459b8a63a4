import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { AppDeps } from '../../platform/context.ts';
import type { Environment } from '../../platform/db/schema.ts';
import { signBody } from '../webhooks/signature.ts';
import { addressPolicy, isPublicAddress, publicOnlyLookup, urlHost } from '../webhooks/url-safety.ts';

/** What a flow's call_url answered: a status, or the error that stopped it. */
export interface CallOutcome {
  statusCode: number | null;
  error: string | null;
}

const USER_AGENT = 'Recaudo-Flows/1.0';

/**
 * POSTs a flow's event body to its URL, signed as a webhook delivery is (`Signature`: the
 * webhooks module's signBody over the exact bytes), under the same address rules (a guarded
 * environment connects only to public addresses: the webhooks module's lookup and checks), with
 * the webhook timeout as a hard deadline. Never inside a transaction.
 */
export function callFlowUrl(
  deps: AppDeps,
  environment: Environment,
  target: { url: string; secret: string | null; eventType: string; eventId: string; flowId: string; runId: string },
  payload: string,
): Promise<CallOutcome> {
  return new Promise((resolve) => {
    let settled = false;
    let deadline: NodeJS.Timeout | undefined;
    const finish = (statusCode: number | null, error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      resolve({ statusCode, error });
    };
    let url: URL;
    try {
      url = new URL(target.url);
    } catch {
      return finish(null, 'invalid URL');
    }
    const body = Buffer.from(payload, 'utf8');
    const headers: Record<string, string | number> = {
      'content-type': 'application/json',
      'content-length': body.length,
      'user-agent': USER_AGENT,
      'x-webhook-event': target.eventType,
      'x-webhook-id': target.eventId,
      'x-flow-id': target.flowId,
      'x-flow-run-id': target.runId,
    };
    if (target.secret) headers.Signature = signBody(target.secret, body);
    const guarded = addressPolicy(deps.config, environment) === 'public';
    const host = urlHost(url);
    if (guarded && net.isIP(host) && !isPublicAddress(host)) return finish(null, `EADDRNOTPUBLIC: refused: ${host} is not a public address`);
    const client = url.protocol === 'https:' ? https : http;
    let req: http.ClientRequest;
    try {
      req = client.request(url, { method: 'POST', headers, agent: false, ...(guarded ? { lookup: publicOnlyLookup } : {}) });
    } catch (error) {
      return finish(null, (error as Error).message);
    }
    deadline = setTimeout(() => {
      finish(null, 'ETIMEDOUT: timed out');
      req.destroy();
    }, deps.config.webhookTimeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => finish(null, err.code ? `${err.code}: ${err.message}` : err.message));
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => {
        const ok = res.statusCode! >= 200 && res.statusCode! < 300;
        finish(res.statusCode ?? null, ok ? null : `HTTP ${res.statusCode}`);
      });
      res.on('error', (err) => finish(res.statusCode ?? null, err.message));
    });
    req.end(body);
  });
}
