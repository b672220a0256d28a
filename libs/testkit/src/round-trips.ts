import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';

/**
 * Counts the statements a piece of work sends to PostgreSQL (each one a round trip: BEGIN and
 * COMMIT included), and only its own: the count follows the async context of `work`, so the
 * outbox relay, consumers and other tests' queries running meanwhile are not counted.
 */
export async function countRoundTrips<T>(work: () => Promise<T>): Promise<{ result: T; roundTrips: number; statements: string[] }> {
  installCounter();
  const counted: string[] = [];
  const result = await counting.run(counted, work);
  return { result, roundTrips: counted.length, statements: counted };
}

const counting = new AsyncLocalStorage<string[]>();
let installed = false;

function installCounter(): void {
  if (installed) return;
  installed = true;
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function countedQuery(this: pg.Client, ...args: unknown[]) {
    const first = args[0] as string | { text?: string; name?: string } | undefined;
    counting.getStore()?.push(typeof first === 'string' ? first : (first?.name ?? first?.text ?? '?'));
    return query.apply(this, args);
  } as typeof pg.Client.prototype.query;
}
