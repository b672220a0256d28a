/**
 * Clients that post channel and direct messages through the gateway with an Idempotency-Key each,
 * retrying every answer whose outcome is unknown (502, 503, 504, 409, a broken connection) with the
 * same key, as a well-behaved client does, and a ledger of what each write was told.
 */

export type WriteKind = 'channel' | 'dm';

export interface LedgerEntry {
  kind: WriteKind;
  key: string;
  content: string;
  /** The fault running when the write was first tried. */
  phase: string;
  /** Every answer, in order (0 for a connection that broke), with the fault running when it came. */
  answers: { status: number; phase: string }[];
  /** The id the 2xx answer gave, if any. */
  id?: string;
  /** True when the client gave up (no 2xx within its retry budget). */
  gaveUp?: boolean;
}

export interface Target {
  gateway: string;
  channelUrl: string;
  conversationId: string;
  /** A token per client index. */
  tokenOf(client: number): string;
}

const RETRYABLE = new Set([0, 409, 429, 502, 503, 504]);
const RETRY_BUDGET_MS = 60_000;

let ipCounter = 0;
/** A fresh client address per request: the load measures faults, not the rate tiers. */
const nextIp = () => {
  ipCounter++;
  return `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;
};

export function createLoad(target: Target, options: { clients: number; pauseMs: number }) {
  const ledger: LedgerEntry[] = [];
  let phase = 'warm-up';
  let running = true;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  async function attempt(entry: LedgerEntry, client: number): Promise<number> {
    const dm = entry.kind === 'dm';
    const url = dm ? `${target.gateway}/v1/dm/messages` : target.channelUrl;
    const body = dm ? { conversationId: target.conversationId, content: entry.content } : { content: entry.content };
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${target.tokenOf(client)}`,
          'content-type': 'application/json',
          'idempotency-key': entry.key,
          'x-forwarded-for': nextIp(),
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
      const answer = (await res.json().catch(() => ({}))) as { id?: string };
      if (res.ok) entry.id = answer.id;
      return res.status;
    } catch {
      return 0;
    }
  }

  async function write(kind: WriteKind, client: number, n: number) {
    const entry: LedgerEntry = {
      kind,
      key: crypto.randomUUID(),
      content: `${kind}-${client}-${n}-${crypto.randomUUID().slice(0, 8)}`,
      phase,
      answers: [],
    };
    ledger.push(entry);
    const started = Date.now();
    for (let tries = 0; ; tries++) {
      const status = await attempt(entry, client);
      entry.answers.push({ status, phase });
      if (status >= 200 && status < 300) return;
      if (!RETRYABLE.has(status) || Date.now() - started > RETRY_BUDGET_MS) {
        entry.gaveUp = true;
        return;
      }
      await sleep(Math.min(2_000, 100 * 2 ** tries));
    }
  }

  async function client(index: number) {
    for (let n = 0; running; n++) {
      await write(n % 2 ? 'dm' : 'channel', index, n);
      await sleep(options.pauseMs);
    }
  }

  const done = Promise.all(Array.from({ length: options.clients }, (_, i) => client(i)));
  return {
    ledger,
    setPhase(name: string) {
      phase = name;
    },
    /** Stops new writes and waits for those in flight (with their retries) to settle. */
    async stop() {
      running = false;
      await done;
    },
  };
}
