import { env } from '@chat/kit';
import { z } from 'zod';

/** The bench's own variables (README.md), validated like every process's configuration. */
export const BenchSettings = z.object({
  /** Seconds measured per row. */
  BENCH_DURATION: env.int(10).pipe(z.number().min(1)),
  /** Seconds sent before each row and not recorded. */
  BENCH_WARMUP: env.int(2).pipe(z.number().min(0)),
  BENCH_CONNECTIONS: env.int(64).pipe(z.number().min(1)),
  /** Names, or prefixes ending in '.', comma-separated; empty: every scenario. */
  BENCH_SCENARIOS: env.list(),
  /** Distinct client IPs claimed in X-Forwarded-For (client-ips.ts). */
  BENCH_IP_POOL: env.int(65_536),
  /** The processes' LOG_LEVEL: request logs off by default, as in the baseline. */
  BENCH_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('warn'),
  BENCH_NODE_ENV: z.enum(['development', 'test', 'production']).default('production'),
  BENCH_RESULTS_DIR: z.string().default('bench-results'),
  /**
   * `compare`: also start a second platform whose every process traces (spans exported to a sink in
   * the bench process), and measure each selected scenario through its gateway right after the
   * untraced one: the "x untraced" figures. `off` (default): one platform, tracing off.
   */
  BENCH_TRACING: z.enum(['off', 'compare']).default('off'),
  /** Every service's DATABASE_POOL_SIZE for the run (unset: the services' own default, 10). */
  BENCH_DATABASE_POOL_SIZE: z.coerce.number().int().min(1).optional(),
});

export type BenchSettings = z.output<typeof BenchSettings>;
