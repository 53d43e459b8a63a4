import assert from 'node:assert/strict';
import type { Company, Req } from './harness.ts';
import { expectError } from './harness.ts';

/**
 * A resource of `owner` (test environment) must look missing to another company and be
 * environment_key_mismatch to the owner's live key. Checks that nothing changed afterwards is
 * the caller's business (the resource is read back by the module test).
 */
export async function expectScoped(owner: Company, other: Company, req: Req): Promise<void> {
  const fromOther = await other.req({ ...req, env: 'test' });
  expectError(fromOther, 404, 'record_not_found', 10002);
  const otherLive = await other.req({ ...req, env: 'live' });
  expectError(otherLive, 404, 'record_not_found', 10002);
  const live = await owner.req({ ...req, env: 'live' });
  expectError(live, 404, 'environment_key_mismatch');
  assert.equal(live.body.code, undefined, 'environment_key_mismatch has no numeric code');
}
