// CPU time of processes, read from /proc (Linux). Elsewhere every reading is null and the
// benchmark simply reports no CPU figures.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

let ticksPerSecond = 100;
try {
  ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8', timeout: 2_000 }).trim()) || 100;
} catch {
  /* keep the usual value */
}

const available = fs.existsSync('/proc/self/stat');

/** utime + stime of one process (all its threads), in milliseconds. */
function processCpuMs(pid: number): { comm: string; ms: number } | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const open = stat.indexOf('(');
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(open + 1, close);
    const fields = stat.slice(close + 2).split(' '); // fields[0] is field 3 (state)
    const ticks = Number(fields[11]) + Number(fields[12]); // fields 14 (utime) and 15 (stime)
    return { comm, ms: (ticks * 1000) / ticksPerSecond };
  } catch {
    return null;
  }
}

/** CPU milliseconds of one process, or null when not measurable. */
export function cpuOf(pid: number | undefined): number | null {
  if (!available || pid === undefined) return null;
  return processCpuMs(pid)?.ms ?? null;
}

/** CPU milliseconds of every process named `comm` (e.g. the PostgreSQL backends), by pid. */
export function cpuOfCommand(comm: string): Map<number, number> | null {
  if (!available) return null;
  const out = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const p = processCpuMs(Number(entry));
    if (p && p.comm === comm) out.set(Number(entry), p.ms);
  }
  return out;
}

/** CPU milliseconds used between two `cpuOfCommand` readings (processes that ended are left out). */
export function cpuDelta(before: Map<number, number> | null, after: Map<number, number> | null): number | null {
  if (!before || !after) return null;
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return total;
}

/** Percent of one core: `usedMs` of CPU over `wallMs` of wall time. */
export function percentOfCore(usedMs: number | null, wallMs: number): number | null {
  if (usedMs === null || wallMs <= 0) return null;
  return Math.round((usedMs / wallMs) * 1000) / 10;
}

/** CPU milliseconds spent busy (not idle, not waiting for I/O) on all cores of the machine. */
export function machineBusyMs(): number | null {
  if (!available) return null;
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0];
    const [, ...fields] = line.trim().split(/\s+/);
    const ticks = fields.map(Number);
    // user nice system idle iowait irq softirq steal (guest time is already counted in user)
    const busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7];
    return (busy * 1000) / ticksPerSecond;
  } catch {
    return null;
  }
}
