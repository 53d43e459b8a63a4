import { createRequire } from 'node:module';

/**
 * OpenTelemetry tracing (docs/operations.md "Tracing"): loaded only when OTEL_EXPORTER_OTLP_ENDPOINT
 * is set — without it not one OpenTelemetry module is imported. The SDK reads the standard OTEL_*
 * variables itself (OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_TRACES_SAMPLER, ...) and
 * exports spans of incoming and outgoing HTTP (node:http), Fastify routes and PostgreSQL queries.
 * It must start before those modules load: src/tracing-init.ts is the entry's first import.
 */
export interface Tracing {
  shutdown(): Promise<void>;
}

export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<Tracing | null> {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT) return null;
  const [{ NodeSDK }, { HttpInstrumentation }, { PgInstrumentation }, fastifyOtel] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-pg'),
    import('@fastify/otel'),
  ]);
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME || 'recaudo',
    instrumentations: [
      new HttpInstrumentation(),
      new PgInstrumentation(),
      // Hooks every Fastify instance as it is created (no change to the app).
      new fastifyOtel.FastifyOtelInstrumentation({ registerOnInitialization: true }),
    ],
  });
  sdk.start();
  // Instrumentations patch a module when it is require()d after they start; node:http reached only
  // through ESM imports never is, so require it here once (the builtin's exports are shared with
  // every import of it, patched in place).
  const require = createRequire(import.meta.url);
  require('node:http');
  require('node:https');
  return {
    shutdown: () => sdk.shutdown(),
  };
}
