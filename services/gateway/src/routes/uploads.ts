import { finished, PassThrough, type Readable } from 'node:stream';
import { AppError } from '@chat/kit';
import type { FastifyReply, FastifyRequest } from 'fastify';

export interface UploadLimits {
  /** An upload that brings no byte for this long is cut. */
  idleMs: number;
  /** ...and one that falls behind this rate, after `idleMs` of grace. */
  minBytesPerSecond: number;
  /** Uploads of one user in flight through this process. */
  perUser: number;
  /** Uploads in flight through this process, all users together: well below the pool's connections. */
  total: number;
}

/**
 * Uploads stream through to the service, unlike other bodies, which the gateway reads whole first
 * (they may be large). So an upload holds one of the pool's connections to the service while it
 * lasts, and a client that sends one slowly, or stops, would hold it for ever: 128 such uploads
 * stalled every request to the service's prefix, files served included. Here an upload is cut
 * (408) when it pauses for `idleMs`, or brings less than `minBytesPerSecond` after `idleMs` of
 * grace (Apache's mod_reqtimeout rule: each `minBytesPerSecond` bytes buys a second more), the time
 * the service was not reading aside; a user has at most `perUser` uploads in flight (429), and all
 * users `total` (429 too), so that uploads never hold the connections other requests need. Refusals
 * come before a connection to the service is taken. Every such answer closes the client's
 * connection; the rest of its body is read and dropped meanwhile, since closing a socket with
 * unread bytes resets it, and the client would not see the answer.
 */
export function createUploadGuard(limits: UploadLimits) {
  const perUser = new Map<string, number>();
  let total = 0;
  const cut = new WeakSet<FastifyRequest>();
  /** Stops the pace rule of an upload the service has begun to answer (its answer is then on its way). */
  const stopPacing = new WeakMap<FastifyRequest, () => void>();

  function admit(user: string): () => void {
    // 429 as Discord's global limit: a 503 would be logged as a failure of the gateway each time.
    if (total >= limits.total) throw refusal(429, 'Too many uploads in progress; try again shortly');
    const mine = perUser.get(user) ?? 0;
    if (mine >= limits.perUser) throw refusal(429, `Too many uploads at once: at most ${limits.perUser}`);
    perUser.set(user, mine + 1);
    total += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      total -= 1;
      const left = (perUser.get(user) ?? 1) - 1;
      if (left > 0) perUser.set(user, left);
      else perUser.delete(user);
    };
  }

  return {
    /**
     * Counts `req`'s upload (429 past a limit) and replaces its body with one that the pace
     * rule cuts, answering 408 itself; both end with the answer, however it ends.
     */
    watch(req: FastifyRequest, reply: FastifyReply): void {
      const source = req.body as Readable;
      let release: () => void;
      try {
        release = admit(req.userId);
      } catch (err) {
        source.resume();
        throw err;
      }
      const { body: paced, stop } = pace(source, limits, (error) => {
        cut.add(req);
        if (!reply.raw.headersSent) reply.code(error.status).headers(error.headers).send({ error: error.message });
      });
      req.body = paced;
      stopPacing.set(req, stop);
      // Also when the client went away before this ran (its 'close' has been and gone).
      finished(reply.raw, () => {
        release();
        paced.destroy();
      });
    },
    /** True when the upload of `req` was cut and answered here: the upstream failure that follows is not the client's answer. */
    answered: (req: FastifyRequest): boolean => cut.has(req),
    /** The service answers `req` (maybe before its body ended: a 413): the pace rule no longer applies. */
    responded: (req: FastifyRequest): void => stopPacing.get(req)?.(),
  };
}

function refusal(status: number, message: string): AppError {
  return new AppError(status, message, { headers: { 'retry-after': '1', connection: 'close' } });
}

/**
 * `source` passed through; once it falls behind the rule, `onCut` hears why, and the body is
 * destroyed (so the request to the service is aborted). Whenever the body ends before `source` did
 * (cut, or the service answered early), the rest of `source` is read and dropped: a socket closed
 * with unread bytes is reset, and its client would not see the answer.
 */
function pace(source: Readable, limits: UploadLimits, onCut: (error: AppError) => void): { body: Readable; stop: () => void } {
  const out = new PassThrough();
  let started = Date.now();
  let received = 0;
  let lastByteAt = started;
  let waitingSince: number | undefined;
  source.on('data', (chunk: Buffer) => {
    received += chunk.length;
    lastByteAt = Date.now();
  });
  source.pipe(out);
  // undici listens from the moment it takes the body; until then a cut must not be an uncaught error.
  out.on('error', () => {});

  // Checked when the earliest deadline comes, not on every chunk: one timer per upload.
  const check = () => {
    const now = Date.now();
    // Bytes wait for the service (no connection yet, or it reads slowly): not the client's time.
    if (out.readableLength > 0) {
      waitingSince ??= now;
      timer = setTimeout(check, limits.idleMs);
      return;
    }
    if (waitingSince !== undefined) {
      const waited = now - waitingSince;
      started += waited;
      lastByteAt = Math.min(lastByteAt + waited, now);
      waitingSince = undefined;
    }
    const idleUntil = lastByteAt + limits.idleMs;
    const paceUntil = started + limits.idleMs + (received / limits.minBytesPerSecond) * 1000;
    if (now < Math.min(idleUntil, paceUntil)) {
      timer = setTimeout(check, Math.min(idleUntil, paceUntil) - now);
      return;
    }
    const reason = now >= idleUntil ? 'The upload stopped arriving' : 'The upload is arriving too slowly';
    const error = new AppError(408, reason, { headers: { connection: 'close' } });
    onCut(error);
    out.destroy(error);
  };
  let timer = setTimeout(check, limits.idleMs);
  const stop = () => clearTimeout(timer);
  out.once('close', () => {
    stop();
    if (source.readableEnded) return;
    source.unpipe(out);
    source.resume();
  });
  source.once('end', stop);
  return { body: out, stop };
}
