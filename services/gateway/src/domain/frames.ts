import { CLIENT_OPS, CLOSE_CODES, ClientFrame, type CloseCode, OP, type ServerFrame } from '@chat/contracts';

export type Decoded = { ok: true; frame: ClientFrame } | { ok: false; code: CloseCode; reason: string };

const fail = (code: CloseCode, reason: string): Decoded => ({ ok: false, code, reason });

/**
 * A client frame, parsed by its contract: text JSON `{op, d}` with an opcode a client may send.
 * Anything else names the close code: 4002 for what cannot be decoded, 4001 for an unknown opcode.
 */
export function decodeFrame(data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): Decoded {
  if (isBinary) return fail(CLOSE_CODES.DECODE_ERROR, 'Frames are JSON text');
  let value: unknown;
  try {
    value = JSON.parse(Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.from(data as ArrayBuffer).toString('utf8'));
  } catch {
    return fail(CLOSE_CODES.DECODE_ERROR, 'Invalid JSON');
  }
  const op = (value as { op?: unknown } | null)?.op;
  if (typeof value !== 'object' || value === null || Array.isArray(value) || typeof op !== 'number') {
    return fail(CLOSE_CODES.DECODE_ERROR, 'Expected an object {op, d}');
  }
  if (!CLIENT_OPS.has(op)) return fail(CLOSE_CODES.UNKNOWN_OPCODE, `Unknown opcode ${op}`);
  const parsed = ClientFrame.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return fail(CLOSE_CODES.DECODE_ERROR, `Invalid payload: ${issue?.path.join('.') || 'd'} ${issue?.message ?? ''}`.trim().slice(0, 120));
  }
  return { ok: true, frame: parsed.data };
}

/** A frame of the gateway's that carries no sequence, as the text sent. */
export function encodeFrame(frame: Exclude<ServerFrame, { op: typeof OP.DISPATCH }>): string {
  return JSON.stringify(frame);
}

export const HEARTBEAT_ACK = encodeFrame({ op: OP.HEARTBEAT_ACK, d: null, s: null, t: null });
export const RECONNECT = encodeFrame({ op: OP.RECONNECT, d: null, s: null, t: null });
export const INVALID_SESSION = encodeFrame({ op: OP.INVALID_SESSION, d: { resumable: false }, s: null, t: null });
export const hello = (heartbeatInterval: number) => encodeFrame({ op: OP.HELLO, d: { heartbeatInterval }, s: null, t: null });
