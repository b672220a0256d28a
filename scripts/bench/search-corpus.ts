import { readFileSync } from 'node:fs';
import { Permission } from '@chat/contracts';
import { env } from '@chat/kit';
import { searchStatement } from '@chat/messaging';
import pg from 'pg';
import { z } from 'zod';

/**
 * The corpus of the search bench (scenarios/search.ts): N messages in C channels of one server,
 * written straight into the guilds database with a few INSERT ... SELECT statements, so a million
 * messages take a minute rather than an hour of POSTs. Words follow a Zipf-like law over a
 * vocabulary (common chat words first, then a long tail of made-up words), so one word or three
 * hit the share of messages they would in a real server; the bench prints the shares it measured.
 */

export const SearchBenchSettings = z.object({
  /** Messages to generate; 0 (the default) skips the search scenarios, which are not for every run. */
  BENCH_SEARCH_MESSAGES: env.int(0).pipe(z.number().min(0)),
  BENCH_SEARCH_CHANNELS: env.int(1000).pipe(z.number().min(1)),
  /** Concurrent searchers: latency is the figure here, not the most a saturated machine can serve. */
  BENCH_SEARCH_CONNECTIONS: env.int(4).pipe(z.number().min(1)),
});
export type SearchBenchSettings = z.output<typeof SearchBenchSettings>;

/** The common words of chat, most frequent first: rank 0 is drawn most often. */
const COMMON = `the i you to a it and is that of in this for me my on be so not have just do we but what with are
was at lol can like if no yes your all get know it's was out up go one about now there how ok when think
good they he she time people been would will more really need see then want too some don't because got
today game back new work make right day here also well still going thanks play why who love sure even
guys much over night last nice never first around tomorrow again something after server channel message
discord bot voice music stream video link picture photo meme emoji role admin mod ban kick invite event
weekend friday monday party movie show episode season book song album band concert ticket match team
score win lose patch update release bug crash fix build deploy code python javascript rust server
database query index search cache memory disk network latency coffee café pizza dinner lunch breakfast
weather rain snow summer winter holiday trip travel flight hotel beach mountain city train station
birthday gift cake school exam homework teacher class project deadline meeting report manager office
naïve résumé zoë rené josé münchen zürich são paulo kraków`
  .split(/\s+/)
  .filter(Boolean);

/** Syllables of the made-up words of the long tail: three of them make 8,000 distinct words. */
const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ren',
  'ta',
  'vo',
  'si',
  'dar',
  'nu',
  'pe',
  'gri',
  'ol',
  'fen',
  'bu',
  'zel',
  'ha',
  'qui',
  'mar',
  'tes',
  'yo',
];
const TAIL = SYLLABLES.length ** 3;
/** How skewed the draw is: rank = floor(n * u^SKEW) for a uniform u. */
const SKEW = 4;

/** The word of a rank, as SQL over `$vocab` (common words) and `$syllables`. */
const wordAt = (rank: string) => `CASE WHEN ${rank} < cardinality($3::text[]) THEN ($3::text[])[${rank} + 1]
  ELSE ($4::text[])[1 + (${rank} - cardinality($3::text[])) % 20] || ($4::text[])[1 + (${rank} - cardinality($3::text[])) / 20 % 20]
    || ($4::text[])[1 + (${rank} - cardinality($3::text[])) / 400 % 20] END`;

/** Single words a searcher types: topic words that each occur in about half a percent of messages. */
export const ONE_WORD_QUERIES = [
  'coffee',
  'deploy',
  'concert',
  'birthday',
  'python',
  'holiday',
  'weather',
  'ticket',
  'cafe',
  'episode',
  'station',
];
/** Three words of a topic, each phrase in a message of every 400 (and the words alone in many more). */
export const THREE_WORD_QUERIES = [
  'server update patch',
  'game night friday',
  'music stream link',
  'coffee and breakfast',
  'new video today',
  'play tomorrow night',
  'team win match',
  'people need help',
];

/** One message in this many carries one of the three-word phrases: people talk about topics, words are not independent. */
const TOPIC_EVERY = 50;

export interface SeededServer {
  serverId: string;
  /** The channels a plain member may read: all but those hidden from @everyone. */
  readableIds: string[];
  messages: number;
}

export interface CorpusOwners {
  serverId: string;
  /** Who wrote the messages (registered users, or ids the users read-model does not know). */
  authorIds: string[];
  /** One channel in this many denies VIEW_CHANNEL to @everyone: a member's search reads the others. */
  hiddenEvery: number;
}

/**
 * Adds `messages` messages to `channels` new text channels of the server, spread over a year, ids
 * UUID v7 in time order as the service issues them. The GIN index is built once after the rows
 * (as a restore would), which is many times faster than updating it row by row.
 */
export async function seedSearchCorpus(
  databaseUrl: string,
  { serverId, authorIds, hiddenEvery }: CorpusOwners,
  settings: Pick<SearchBenchSettings, 'BENCH_SEARCH_MESSAGES' | 'BENCH_SEARCH_CHANNELS'>,
): Promise<SeededServer> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await db.query(`SET maintenance_work_mem = '256MB'`);
    const channels = await db.query<{ id: string }>(
      `INSERT INTO channels (id, server_id, name, channel_type, position)
       SELECT gen_random_uuid(), $1, 'bench-' || g, 'text', 1000 + g FROM generate_series(1, $2) g RETURNING id`,
      [serverId, settings.BENCH_SEARCH_CHANNELS],
    );
    const channelIds = channels.rows.map((r) => r.id);
    await db.query(
      `INSERT INTO channel_overrides (id, channel_id, role_id, deny_bits)
       SELECT gen_random_uuid(), c, $1, $2 FROM unnest($3::uuid[]) WITH ORDINALITY AS x(c, i) WHERE i % $4 = 0`,
      [serverId, String(Permission.VIEW_CHANNEL), channelIds, hiddenEvery],
    );
    await db.query('DROP INDEX messages_search');
    await db.query(
      `INSERT INTO messages (id, channel_id, server_id, author_id, content, mentions, created_at)
       SELECT (substr(t.hex, 1, 8) || '-' || substr(t.hex, 9, 4) || '-7' || substr(r.hex, 1, 3) || '-8' || substr(r.hex, 4, 3) || '-'
                || lpad(to_hex(g), 12, '0'))::uuid,
              ($5::uuid[])[1 + g % cardinality($5::uuid[])], $1, ($6::uuid[])[1 + (g::bigint * 7919) % cardinality($6::uuid[])],
              c.content, '{"users": [], "roles": [], "everyone": false}', t.at
       FROM generate_series(1, $2::int) g
       CROSS JOIN LATERAL (SELECT now() - interval '365 days' + (g * interval '365 days') / $2 AS at) ts
       CROSS JOIN LATERAL (SELECT lpad(to_hex((extract(epoch FROM ts.at) * 1000)::bigint), 12, '0') AS hex, ts.at) t
       CROSS JOIN LATERAL (SELECT md5(g::text) AS hex) r
       CROSS JOIN LATERAL (
         SELECT string_agg(${wordAt('w.rank')}, ' ')
                  || CASE WHEN g % ${TOPIC_EVERY} = 0 THEN ' ' || ($7::text[])[1 + (g / ${TOPIC_EVERY}) % cardinality($7::text[])] ELSE '' END
                  AS content
         FROM (SELECT floor((cardinality($3::text[]) + ${TAIL}) * random() ^ ${SKEW})::int AS rank, k
               FROM generate_series(1, 3 + (g * 31) % 13) k) w) c`,
      [serverId, settings.BENCH_SEARCH_MESSAGES, COMMON, SYLLABLES, channelIds, authorIds, THREE_WORD_QUERIES],
    );
    await db.query('CREATE INDEX messages_search ON messages USING gin (search)');
    await db.query('ANALYZE messages');
    const readableIds = channelIds.filter((_, i) => (i + 1) % hiddenEvery !== 0);
    return { serverId, readableIds, messages: settings.BENCH_SEARCH_MESSAGES };
  } finally {
    await db.end();
  }
}

/**
 * What a million messages cost on disk: the table with its indexes and TOAST, and the GIN index
 * alone; and the database's memory beside it: a table that does not fit in shared_buffers is copied
 * from the OS cache page by page on every search, and buffers in small pages cost a search about a
 * fifth more CPU in TLB misses than in huge pages (see `backing.sh tune-postgres`).
 */
export async function corpusSizes(databaseUrl: string, messages: number): Promise<string> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ total: number; heap: number; gin: number; buffers: string; pages: string | null }>(
      `SELECT pg_total_relation_size('messages')::float8 AS total, pg_table_size('messages')::float8 AS heap,
              pg_relation_size('messages_search')::float8 AS gin, current_setting('shared_buffers') AS buffers,
              current_setting('shared_memory_size_in_huge_pages', true) AS pages`,
    );
    const perMillion = (bytes: number) => `${((bytes / messages) * 1e6) / 2 ** 20}`.replace(/(\.\d).*/, '$1');
    const { total, heap, gin, buffers, pages } = rows[0]!;
    return `messages per million: ${perMillion(total)} MiB in all (table ${perMillion(heap)} MiB, GIN index ${perMillion(gin)} MiB); PostgreSQL shared_buffers ${buffers}, its shared memory ${pages ?? 'an unreported number of'} huge pages; ${hugePagesHeld()}`;
  } finally {
    await db.end();
  }
}

/** The huge pages held on this machine (the bench's PostgreSQL is local): mapped or reserved for a mapping. */
function hugePagesHeld(): string {
  const counts = Object.fromEntries(
    [...readFileSync('/proc/meminfo', 'utf8').matchAll(/^HugePages_(Total|Free|Rsvd):\s+(\d+)/gm)].map(([, name, value]) => [
      name,
      Number(value),
    ]),
  );
  return `${counts.Total! - counts.Free! + counts.Rsvd!} of this machine's ${counts.Total} huge pages held`;
}

/**
 * How many messages each query finds for a plain member, as a share of the corpus, and the plan
 * of the first one: the statement guilds runs for them (searchStatement with guilds' `except` scope,
 * the server's channels the member may not read; its version guard, one key lookup, aside).
 */
export async function explainSearch(databaseUrl: string, seeded: SeededServer, queries: string[]): Promise<string[]> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const source = { table: 'messages', scope: 'm.channel_id' };
  try {
    const { rows: unreadable } = await db.query<{ id: string }>(
      'SELECT id FROM channels WHERE server_id = $1 AND NOT (id = ANY($2::uuid[]))',
      [seeded.serverId, seeded.readableIds],
    );
    const statementOf = (text: string) =>
      searchStatement(source, {
        scope: { except: unreadable.map((r) => r.id), current: 'true' },
        text,
        page: { limit: 25 },
        filter: { where: 'm.server_id = $6', params: [seeded.serverId] },
      });
    const lines: string[] = [];
    for (const text of queries) {
      const statement = statementOf(text);
      const { rows } = await db.query<{ total: number }>(statement.sql, statement.params);
      lines.push(`"${text}": ${rows[0]!.total} hits (${((100 * rows[0]!.total) / seeded.messages).toFixed(2)}% of messages)`);
    }
    const first = statementOf(queries[0]!);
    const plan = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${first.sql}`, first.params);
    // The channel array makes one line of kilobytes: its start says enough.
    const clip = (line: string) => (line.length > 160 ? `${line.slice(0, 160)}...` : line);
    return [...lines, `plan of "${queries[0]}":`, ...plan.rows.map((r) => `  ${clip(r['QUERY PLAN'])}`)];
  } finally {
    await db.end();
  }
}
