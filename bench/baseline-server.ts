// The reference point: a bare Fastify server with one JSON route, no database, no plugins.
// Started by bench/run.ts as a child process; reports its port over IPC.
import Fastify from 'fastify';

const app = Fastify({ logger: false });

app.get('/baseline', async () => ({ status: 'ok', object: 'baseline' }));
app.post('/baseline', async (req) => req.body);

const address = await app.listen({ host: '127.0.0.1', port: 0 });
const port = Number(new URL(address).port);
process.send?.({ type: 'listening', port });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
