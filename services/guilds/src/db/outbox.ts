import { exec, markEventsWritten, type OutboxRow, type Queryable } from '@chat/kit';

/**
 * Events of one change written into the outbox in one statement, in the order given (their `seq`
 * follows it, and the relay publishes in `seq` order). Each row comes from `outboxRow`, so each
 * payload was parsed by its contract as `enqueueEvent` would; one round trip instead of one per event.
 */
export async function enqueueEvents(db: Queryable, rows: OutboxRow[]): Promise<void> {
  if (rows.length === 0) return;
  await exec(
    db,
    `INSERT INTO outbox (id, subject, payload, headers)
     SELECT e.id, e.subject, e.payload, e.headers
     FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $4::jsonb[]) WITH ORDINALITY AS e(id, subject, payload, headers, ord)
     ORDER BY e.ord`,
    [
      rows.map((r) => r.id),
      rows.map((r) => r.subject),
      rows.map((r) => JSON.stringify(r.payload)),
      rows.map((r) => JSON.stringify(r.headers)),
    ],
  );
  markEventsWritten(db);
}
