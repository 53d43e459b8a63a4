/** Injectable time source: production uses the system clock, tests move a manual one. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * Real time plus an offset tests move forward. `freeze()` stops it following real time (for tests
 * that check exact elapsed seconds, which a loaded machine would otherwise blur) until `unfreeze()`.
 */
export class ManualClock implements Clock {
  private offsetMs = 0;
  private frozenAt: number | null = null;
  now(): Date {
    return new Date((this.frozenAt ?? Date.now()) + this.offsetMs);
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
  freeze(): void {
    this.frozenAt ??= Date.now();
  }
  unfreeze(): void {
    if (this.frozenAt === null) return;
    // Keep the time it shows: the real time skipped while frozen comes off the offset.
    this.offsetMs -= Date.now() - this.frozenAt;
    this.frozenAt = null;
  }
}

/** The Bogotá calendar month of an instant, as year * 12 + month index (Colombia has no DST). */
export function bogotaMonth(now: Date): number {
  const local = new Date(now.getTime() - 5 * 3_600_000);
  return local.getUTCFullYear() * 12 + local.getUTCMonth();
}

/** The instant the Bogotá calendar day of `now` began (Colombia is UTC-5 all year). */
export function bogotaDayStart(now: Date): Date {
  const local = new Date(now.getTime() - 5 * 3_600_000);
  return new Date(Date.UTC(local.getUTCFullYear(), local.getUTCMonth(), local.getUTCDate()) + 5 * 3_600_000);
}

/** A card is valid through the last day of its expiry month (Bogotá time). */
export function cardExpiredAt(card: { exp_month: number; exp_year: number }, now: Date): boolean {
  return card.exp_year * 12 + (card.exp_month - 1) < bogotaMonth(now);
}
