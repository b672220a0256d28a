import { loadavg } from 'node:os';
import { endSpan, extractContext, SpanKind, startSpan, startTracing, stopTracing, traceHeaders, withSpan } from '@chat/kit';

// `npm run bench:tracing`: what the tracing of one hop costs in CPU, in this process, without the
// platform around it. The same hop (a span continued from incoming headers, the work run under it,
// the trace headers read for the next hop, the span ended: what the kit does per HTTP request, NATS
// request and consumed event) three ways, in rounds that alternate so that drift hits all alike:
//
// - bare: the work alone, no tracing helper called (the code as if it had never been instrumented);
// - off: through the kit's helpers with tracing off (no endpoint: the default);
// - on: through the same helpers with tracing on, spans handed to an exporter that drops them.
//
// "off" over "bare" is what tracing costs when it is off; "on" shows what turning it on costs.

type Exporter = NonNullable<Parameters<typeof startTracing>[0]['exporter']>;

const ITERATIONS = Number(process.env.BENCH_TRACING_ITERATIONS ?? 200_000);
const ROUNDS = Number(process.env.BENCH_TRACING_ROUNDS ?? 7);
const incoming = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'content-type': 'application/json' };
let sink = 0;

/** Stands for a handler's work: small, so that any cost of the helpers shows. */
function work(outgoing: Record<string, string>): number {
  return Object.keys(outgoing).length + 1;
}

function bareHop(): number {
  return work({});
}

function instrumentedHop(): number {
  const span = startSpan('GET /v1/users/@me', { kind: SpanKind.SERVER, parent: extractContext(incoming) });
  const result = withSpan(span, () => work(traceHeaders()));
  endSpan(span);
  return result;
}

// One loop per variant, written out: a loop shared by all would see several callees at one call
// site and be optimised for none.
function loopBare(): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < ITERATIONS; i++) sink += bareHop();
  return Number(process.hrtime.bigint() - started) / ITERATIONS;
}

function loopInstrumented(): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < ITERATIONS; i++) sink += instrumentedHop();
  return Number(process.hrtime.bigint() - started) / ITERATIONS;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

function rounds(variants: Record<string, () => number>): Record<string, number> {
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
  // A first round warms the JIT up and is not recorded.
  for (const loop of Object.values(variants)) loop();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, loop] of Object.entries(variants)) samples[name]?.push(loop());
  }
  return Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, median(values)]));
}

const off = rounds({ bare: loopBare, off: loopInstrumented });
let exported = 0;
const droppingExporter: Exporter = {
  export(spans, done) {
    exported += spans.length;
    done({ code: 0 });
  },
  shutdown: async () => {},
};
startTracing({ service: 'bench-tracing', exporter: droppingExporter });
const on = rounds({ bare: loopBare, on: loopInstrumented });
await stopTracing();

const fmt = (ns: number) => `${ns.toFixed(1).padStart(8)} ns`;
console.log(`one traced hop, median of ${ROUNDS} rounds of ${ITERATIONS} calls (${process.version}, load average ${loadAverage()})`);
console.log(`  bare (never instrumented)  ${fmt(off.bare ?? 0)}`);
console.log(`  tracing off                ${fmt(off.off ?? 0)}   off - bare: ${fmt((off.off ?? 0) - (off.bare ?? 0))}`);
console.log(`  tracing on (spans dropped) ${fmt(on.on ?? 0)}   on - bare:  ${fmt((on.on ?? 0) - (on.bare ?? 0))}`);
console.log(`  (${exported} spans exported while on; checksum ${sink % 10})`);

function loadAverage(): string {
  return loadavg()
    .map((n) => n.toFixed(1))
    .join(' ');
}
