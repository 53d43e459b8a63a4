// Preloaded (`--import`) into every process the benchmark starts: when the benchmark runner goes
// away without cleaning up (SIGKILL, crash), the IPC channel closes and the child stops itself.
// SIGTERM lets the service run its own graceful shutdown.
if (process.send) {
  process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));
  process.channel?.unref();
}
