import { PassThrough, type Readable } from 'node:stream';
import { AppError } from '@chat/kit';
import type { FastifyReply, FastifyRequest } from 'fastify';

export interface UploadLimits {
  /** An upload that brings no byte for this long is cut. */
  idleMs: number;
  /** ...and one that falls behind this rate, after `idleMs` of grace. */
  minBytesPerSecond: number;
  /** Uploads of one user in flight through this process. */
  perUser: number;
}

/**
 * Uploads stream through to the service, unlike other bodies, which the gateway reads whole first
 * (they may be large). So an upload holds one of the pool's connections to the service while it
 * lasts, and a client that sends one slowly, or stops, would hold it for ever: 128 such uploads
 * stalled every request to the service's prefix, files served included. Here an upload is cut
 * (408) when it pauses for `idleMs`, or brings less than `minBytesPerSecond` after `idleMs` of
 * grace (Apache's mod_reqtimeout rule: each `minBytesPerSecond` bytes buys a second more); and a
 * user has at most `perUser` uploads in flight, the next one refused (429) before a connection to
 * the service is taken. Both answers close the client's connection, whose body is not read further.
 */
export function createUploadGuard(limits: UploadLimits) {
  const inFlight = new Map<string, number>();
  const cut = new WeakMap<FastifyRequest, AppError>();

  function admit(user: string): () => void {
    const count = inFlight.get(user) ?? 0;
    if (count >= limits.perUser) {
      throw new AppError(429, `Too many uploads at once: at most ${limits.perUser}`, {
        headers: { 'retry-after': '1', connection: 'close' },
      });
    }
    inFlight.set(user, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (inFlight.get(user) ?? 1) - 1;
      if (left > 0) inFlight.set(user, left);
      else inFlight.delete(user);
    };
  }

  return {
    /**
     * Counts `req`'s upload for its user (429 past the limit) and replaces its body with one that
     * the pace rule cuts; both end with the answer.
     */
    watch(req: FastifyRequest, reply: FastifyReply): void {
      const release = admit(req.userId);
      const paced = pace(req.body as Readable, limits, (reason) => cut.set(req, reason));
      req.body = paced;
      reply.raw.once('close', () => {
        release();
        paced.destroy();
      });
    },
    /** Why the upload of `req` was cut, if it was: the answer to send instead of the upstream failure. */
    cutShort: (req: FastifyRequest): AppError | undefined => cut.get(req),
  };
}

export type UploadGuard = ReturnType<typeof createUploadGuard>;

/**
 * `source` passed through, destroyed (so the request to the service is aborted) once it falls
 * behind the rule; `onCut` hears why first.
 */
function pace(source: Readable, limits: UploadLimits, onCut: (reason: AppError) => void): Readable {
  const out = new PassThrough();
  const started = Date.now();
  let received = 0;
  let lastByteAt = started;
  source.on('data', (chunk: Buffer) => {
    received += chunk.length;
    lastByteAt = Date.now();
  });
  source.pipe(out);

  // Checked when the earliest deadline comes, not on every chunk: one timer per upload.
  const check = () => {
    const now = Date.now();
    const idleUntil = lastByteAt + limits.idleMs;
    const paceUntil = started + limits.idleMs + (received / limits.minBytesPerSecond) * 1000;
    if (now < Math.min(idleUntil, paceUntil)) {
      timer = setTimeout(check, Math.min(idleUntil, paceUntil) - now);
      return;
    }
    const reason = now >= idleUntil ? 'The upload stopped arriving' : 'The upload is arriving too slowly';
    const error = new AppError(408, reason, { headers: { connection: 'close' } });
    onCut(error);
    source.unpipe(out);
    out.destroy(error);
  };
  let timer = setTimeout(check, limits.idleMs);
  out.once('close', () => clearTimeout(timer));
  source.once('end', () => clearTimeout(timer));
  return out;
}
