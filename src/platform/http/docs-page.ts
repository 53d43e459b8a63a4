import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import scalarApiReference from '@scalar/fastify-api-reference';

/**
 * The API reference at `/docs` (docs/openapi.md): Scalar's renderer over `/v1/openapi.json`,
 * served entirely from this process — its script comes from the npm package (`/docs/js/scalar.js`),
 * no CDN and no web fonts (system fonts), so it works offline and on a closed network. Scalar's
 * layout is responsive: on a phone the navigation folds into a menu and the operations stack.
 *
 * The script is about 5 MB: it is sent gzip-compressed (about a quarter of that) when the browser
 * accepts it, and cached by the browser for a day.
 */
const PREFIX = '/docs';
const SCRIPT = `${PREFIX}/js/scalar.js`;

/** Recaudo's colours and a little room on small screens. */
const CUSTOM_CSS = `
.light-mode {
  --scalar-color-accent: #0b6e4f;
  --scalar-background-accent: #0b6e4f1f;
}
.dark-mode {
  --scalar-color-accent: #3fbf8f;
  --scalar-background-accent: #3fbf8f1f;
}
`;

export async function registerDocsPage(app: FastifyInstance): Promise<void> {
  let compressed: Buffer | null = null;
  const serveCompressedScript = async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.method !== 'GET' || req.url.split('?')[0] !== SCRIPT) return;
    reply.header('cache-control', 'public, max-age=86400');
    if (!/\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))) return;
    if (!compressed) {
      // The plugin's own handler answers the plain script; take its bytes once and keep them gzipped.
      const plain = await app.inject({ method: 'GET', url: SCRIPT, headers: { 'accept-encoding': 'identity' } });
      compressed = gzipSync(plain.rawPayload, { level: 9 });
    }
    return reply
      .header('content-type', 'application/javascript; charset=utf-8')
      .header('content-encoding', 'gzip')
      .header('vary', 'accept-encoding')
      .send(compressed);
  };

  await app.register(scalarApiReference, {
    routePrefix: PREFIX,
    logLevel: 'warn',
    hooks: { onRequest: serveCompressedScript },
    configuration: {
      // Relative to /docs/, so the page also works behind a proxy that mounts the service on a path.
      url: '../v1/openapi.json',
      pageTitle: 'Recaudo API',
      title: 'Recaudo API',
      theme: 'default',
      layout: 'modern',
      withDefaultFonts: false,
      telemetry: false,
      showDeveloperTools: 'never',
      hideClientButton: true,
      showOperationId: true,
      defaultOpenFirstTag: true,
      orderRequiredPropertiesFirst: true,
      customCss: CUSTOM_CSS,
      metaData: { title: 'Recaudo API', description: 'Payment collection and DIAN e-invoicing API reference' },
    },
  });
}
