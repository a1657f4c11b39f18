// The short soak of CI (soak.mjs; the 5-minute one is scripts/load-test.sh, docs/server.md): 30 s
// of 16 streaming clients beside 50 trickling, 100 idle and one hostile client cycling through
// every malformed and oversized request. Every check of the long run applies; RSS may move 25 %
// after its 6 s warm-up (the long run allows 5 % after 60 s).
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { runSoak, describeSoak } from './soak.mjs';

it('30 s soak of normal and hostile clients: no errors, descriptors and threads back, RSS bounded', async () => {
  const r = await runSoak({ seconds: 30, clients: 16, trickle: 50, idle: 100, rssTolerance: 0.25 });
  console.log(describeSoak(r.summary));
  assert.deepEqual(r.failures, [], r.serverLog);
  assert.ok(r.summary.normal.ok > 0 && r.summary.trickling.closed_by_server > 0);
});
