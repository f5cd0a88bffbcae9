// graphile-worker with a no-op task `noop`, reporting like bench/workers/report.py.
// Usage: node bench/workers/graphile_worker.mjs '<json config>'
//   config: dsn, latency, migrate (install the schema and exit), batched (localQueue
//   and batched completion, the configuration of graphile-worker's performance docs),
//   soak (the task sleeps the payload's "ms" and fails the first attempt of a job whose
//   payload says "fail"; only first attempts report their seq, as brooq_worker.py's soak),
//   capacity (handler starts a second at most in the process, as bench/workers/capacity.py:
//   a handler waits for the next slot of a 1/capacity schedule; the pressure bench's overload)
import { Logger, run, runMigrations } from "graphile-worker";

const cfg = JSON.parse(process.argv[2]);
const worker = {
  connectionString: cfg.dsn,
  concurrentJobs: cfg.concurrency ?? 24,
  maxPoolSize: (cfg.concurrency ?? 24) + 1,
  pollInterval: 2000,
};
if (cfg.batched) {
  worker.localQueue = { size: cfg.localQueueSize ?? 500 };
  worker.completeJobBatchDelay = 0;
  worker.failJobBatchDelay = 0;
}
const logFactory = () => (level, message) => {
  // the soak's planned failures are logged at error too: not its stderr's business
  if (level === "error" && !(cfg.soak && message.includes("planned failure"))) {
    process.stderr.write(`graphile: ${message}\n`);
  }
};

if (cfg.migrate) {
  await runMigrations({ preset: { worker } , logger: new Logger(logFactory) });
  process.exit(0);
}

let count = 0, first = 0n, last = 0n, printed = -1;
let nextSlot = 0; // ms (performance.now()); a paused worker catches up on 250 ms at most
async function admitted() {
  const now = performance.now();
  const slot = Math.max(now - 250, nextSlot);
  nextSlot = slot + 1000 / cfg.capacity;
  if (slot > now) await new Promise((resolve) => setTimeout(resolve, slot - now));
}
let starts = [];
const taskList = {
  noop: async (payload, helpers) => {
    if (cfg.capacity) await admitted();
    const t = process.hrtime.bigint();
    if (count === 0) first = t;
    count++;
    last = t;
    const retry = cfg.soak && helpers.job.attempts > 1;
    if (cfg.latency) starts.push(retry ? -1 : (payload.seq ?? -1), t);
    if (cfg.soak) {
      await new Promise((resolve) => setTimeout(resolve, payload.ms));
      if (payload.fail && !retry) throw new Error("the soak's planned failure (retried)");
    }
  },
};
setInterval(() => {
  const lines = [];
  if (starts.length) {
    lines.push("L " + starts.join(" "));
    starts = [];
  }
  if (count !== printed) {
    printed = count;
    lines.push(`P ${count} ${first} ${last}`);
  }
  if (lines.length) process.stdout.write(lines.join("\n") + "\n");
}, 100);

const runner = await run({
  preset: { worker }, taskList, logger: new Logger(logFactory), noHandleSignals: true,
});
process.stdout.write("R\n");
for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, () => { runner.stop().finally(() => process.exit(0)); });
}
await runner.promise;
