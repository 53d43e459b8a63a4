import type { DianSettings } from './tables.ts';

/**
 * The DIAN web-service settings of a fiscal profile (docs/dian-webservice.md "Configuration").
 * `endpoint` is `habilitacion` (DIAN's test/enablement service), `produccion`, or an explicit https
 * URL on a DIAN host (`*.dian.gov.co`: a company must not make the server call arbitrary hosts).
 * When the process runs with DIAN_ALLOW_INSECURE_ENDPOINT=true (a local fake DIAN server in tests
 * and development) any https host and plain http to a loopback host are accepted too.
 */

export const DIAN_ENDPOINT_NAMES = ['habilitacion', 'produccion'] as const;
export const DIAN_MODES = ['sync', 'async', 'test_set'] as const;
export const DIAN_TIMEOUT_MIN_MS = 100;
export const DIAN_TIMEOUT_MAX_MS = 120_000;

export const DEFAULT_DIAN_SETTINGS: DianSettings = { endpoint: 'produccion', mode: 'sync', test_set_id: null, timeout_ms: 30_000 };
/** The test environment's default points at DIAN's habilitación service (it is only used by a live profile anyway). */
export const DEFAULT_TEST_DIAN_SETTINGS: DianSettings = { ...DEFAULT_DIAN_SETTINGS, endpoint: 'habilitacion' };

export function insecureDianEndpointsAllowed(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.DIAN_ALLOW_INSECURE_ENDPOINT === 'true';
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Why an endpoint is not acceptable, or null when it is. */
export function dianEndpointProblem(endpoint: string, env: NodeJS.ProcessEnv = process.env): string | null {
  if ((DIAN_ENDPOINT_NAMES as readonly string[]).includes(endpoint)) return null;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return 'must be habilitacion, produccion or an https URL';
  }
  if (url.username || url.password) return 'must not carry credentials';
  const dianHost = url.hostname === 'dian.gov.co' || url.hostname.endsWith('.dian.gov.co');
  if (url.protocol === 'https:' && (dianHost || insecureDianEndpointsAllowed(env))) return null;
  if (url.protocol === 'https:') return 'an https URL must be on a DIAN host (*.dian.gov.co)';
  if (url.protocol === 'http:' && LOOPBACK.has(url.hostname) && insecureDianEndpointsAllowed(env)) return null;
  return url.protocol === 'http:' && LOOPBACK.has(url.hostname)
    ? 'an http URL is only accepted when the server runs with DIAN_ALLOW_INSECURE_ENDPOINT=true'
    : 'must be habilitacion, produccion or an https URL';
}

/** Problems of a complete settings object, by field (`dian.mode`, ...). */
export function dianSettingsProblems(s: DianSettings): Record<string, string> {
  const problems: Record<string, string> = {};
  const endpoint = dianEndpointProblem(s.endpoint);
  if (endpoint) problems['dian.endpoint'] = endpoint;
  if (s.mode === 'test_set' && !s.test_set_id) problems['dian.test_set_id'] = 'is required when mode is test_set';
  if (s.mode === 'test_set' && s.endpoint === 'produccion') problems['dian.mode'] = 'test_set is only available on the habilitacion endpoint';
  return problems;
}

/** The client's endpoint: `habilitacion` → `test`, `produccion` → `production`, a URL as is. */
export function clientEndpoint(endpoint: string): string {
  if (endpoint === 'habilitacion') return 'test';
  if (endpoint === 'produccion') return 'production';
  return endpoint;
}
