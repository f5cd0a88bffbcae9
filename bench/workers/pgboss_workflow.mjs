// pg-boss's side of bench/workflows.py: one workflow enqueued in one call, then drained.
// Usage: node bench/workers/pgboss_workflow.mjs '<json config>'
//   config: dsn, graph (a JSON file: {"n": jobs, "edges": [[child, parent], ...]}, element
//   indexes from 0, parents before their children), consumers, batch, cap_s
// Prints one JSON line: the times, every claim's and settle's milliseconds, and per
// element when the fetch that returned it came back and when its complete was sent
// (bench/workflows.py checks that no child was fetched before its parents' completes).
// The same loop as brooq's side: `consumers` loops each fetch `batch` jobs and complete
// them; an empty fetch waits 1 ms. pg-boss releases a child out of band (its resolver,
// every flowIntervalSeconds, 1 s at the least); here a loop calls boss.resolveFlow() back
// to back while jobs remain, the fastest release pg-boss offers.
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { PgBoss } from "pg-boss";

const cfg = JSON.parse(process.argv[2]);
const graph = JSON.parse(readFileSync(cfg.graph, "utf8"));
const queue = "wf";
const boss = new PgBoss({
  connectionString: cfg.dsn, supervise: false, schedule: false,
  max: cfg.consumers + 2,
});
boss.on("error", (e) => process.stderr.write(`pg-boss: ${e.message}\n`));
await boss.start();
await boss.createQueue(queue);

const parents = Array.from({ length: graph.n }, () => []);
for (const [c, p] of graph.edges) parents[c].push(p);

let t = performance.now();
const ids = new Array(graph.n);
if (graph.edges.length === 0) {
  const got = await boss.insert(queue, Array.from({ length: graph.n }, () => ({ data: {} })),
    { returnId: true });
  got.forEach((id, i) => { ids[i] = id; });
} else {
  const flow = parents.map((ps, i) => ({
    ref: `j${i}`, name: queue, data: {},
    ...(ps.length ? { dependsOn: ps.map((p) => `j${p}`) } : {}),
  }));
  const refs = await boss.flow(flow);
  for (let i = 0; i < graph.n; i++) ids[i] = refs[`j${i}`];
}
const enqueueS = (performance.now() - t) / 1000;

const index = new Map(ids.map((id, i) => [id, i]));
const claimedAt = new Float64Array(graph.n);   // when the fetch that returned it came back
const settleSent = new Float64Array(graph.n);  // when its complete was sent
const claimMs = [], settleMs = [];
let settled = 0, emptyClaims = 0;
const t0 = performance.now();
const deadline = t0 + cfg.cap_s * 1000;
const more = () => settled < graph.n && performance.now() < deadline;

async function consume() {
  while (more()) {
    const a = performance.now();
    const jobs = await boss.fetch(queue, { batchSize: cfg.batch });
    const b = performance.now();
    claimMs.push(b - a);
    if (!jobs.length) {
      emptyClaims++;
      await new Promise((r) => setTimeout(r, 1));
      continue;
    }
    for (const j of jobs) claimedAt[index.get(j.id)] = b;
    const c = performance.now();
    for (const j of jobs) settleSent[index.get(j.id)] = c;
    await boss.complete(queue, jobs.map((j) => j.id));
    settleMs.push(performance.now() - c);
    settled += jobs.length;
  }
}

async function resolve() {
  while (more()) await boss.resolveFlow();
}

await Promise.all([
  ...Array.from({ length: cfg.consumers }, consume),
  ...(graph.edges.length ? [resolve()] : []),
]);
const drainS = (performance.now() - t0) / 1000;
process.stdout.write(JSON.stringify({
  enqueue_s: enqueueS, drain_s: drainS, settled, claim_ms: claimMs, settle_ms: settleMs,
  empty_claims: emptyClaims, claimed_at: Array.from(claimedAt), settle_sent: Array.from(settleSent),
}) + "\n");
await boss.stop({ graceful: false, wait: false });
process.exit(0);
