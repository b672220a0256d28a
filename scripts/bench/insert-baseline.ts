import { createPool } from '@chat/kit';
import { createTestDatabase, resolveBacking } from '@chat/testkit';

/** What a write path is compared with: the database alone, no HTTP, no service code. */
export interface InsertBaseline {
  rowsPerSecond: number;
  p50: number;
  p99: number;
  callers: number;
  poolSize: number;
}

/**
 * Raw single-row INSERTs of a 200-byte body from `callers` concurrent callers over a pool of 10
 * (the services' pool size), for the same duration as a scenario row, in a database of its own.
 */
export async function measureInsertBaseline(callers: number, durationSeconds: number): Promise<InsertBaseline> {
  const { backing, stop } = await resolveBacking();
  const database = await createTestDatabase(backing.postgresUrl, 'bench_insert');
  const pool = createPool(database.url, 10);
  try {
    await pool.query('CREATE TABLE rows (id bigserial PRIMARY KEY, body text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())');
    const body = 'x'.repeat(200);
    const latencies: number[] = [];
    const deadline = Date.now() + durationSeconds * 1000;
    const caller = async () => {
      while (Date.now() < deadline) {
        const started = performance.now();
        await pool.query('INSERT INTO rows (body) VALUES ($1)', [body]);
        latencies.push(performance.now() - started);
      }
    };
    await Promise.all(Array.from({ length: callers }, caller));
    latencies.sort((a, b) => a - b);
    const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
    return { rowsPerSecond: Math.round(latencies.length / durationSeconds), p50: at(0.5), p99: at(0.99), callers, poolSize: 10 };
  } finally {
    await pool.end();
    await database.drop();
    await stop();
  }
}
