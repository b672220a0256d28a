import { describe, expect, it } from 'vitest';
import { decodeFrame } from '../src/domain/frames.ts';

const text = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

describe('decodeFrame', () => {
  it('accepts the three frames a client sends', () => {
    expect(decodeFrame(text({ op: 1, d: null }), false)).toEqual({ ok: true, frame: { op: 1, d: null } });
    expect(decodeFrame(text({ op: 2, d: { token: 't' } }), false)).toEqual({ ok: true, frame: { op: 2, d: { token: 't' } } });
    const resume = { op: 6, d: { token: 't', sessionId: '0190a7a0-0000-7000-8000-000000000000', seq: 4 } };
    expect(decodeFrame(text(resume), false)).toEqual({ ok: true, frame: resume });
  });

  it.each([
    ['binary', Buffer.from([1, 2]), true, 4002],
    ['not JSON', text('{'), false, 4002],
    ['an array', text([1]), false, 4002],
    ['null', text('null'), false, 4002],
    ['op not a number', text({ op: '1' }), false, 4002],
    ['a server opcode', text({ op: 11, d: null }), false, 4001],
    ...[0, 7, 9, 10].map((op) => [`server opcode ${op}`, text({ op, d: null }), false, 4001]),
    ['an unknown opcode', text({ op: 3, d: {} }), false, 4001],
    ...[-1, 1.5, '1'].map((d) => [`HEARTBEAT with d ${JSON.stringify(d)}`, text({ op: 1, d }), false, 4002]),
    ['IDENTIFY without token', text({ op: 2, d: {} }), false, 4002],
    ['IDENTIFY with d null', text({ op: 2, d: null }), false, 4002],
    ['IDENTIFY with a number as token', text({ op: 2, d: { token: 5 } }), false, 4002],
    ['IDENTIFY with an empty token', text({ op: 2, d: { token: '' } }), false, 4002],
    [
      'RESUME with a fractional seq',
      text({ op: 6, d: { token: 't', sessionId: '0190a7a0-0000-7000-8000-000000000000', seq: 1.5 } }),
      false,
      4002,
    ],
    ['RESUME with a sessionId that is no id', text({ op: 6, d: { token: 't', sessionId: 'abc', seq: 0 } }), false, 4002],
    [
      'RESUME with a negative seq',
      text({ op: 6, d: { token: 't', sessionId: '0190a7a0-0000-7000-8000-000000000000', seq: -1 } }),
      false,
      4002,
    ],
  ])('closes %s with its code', (_name, data, binary, code) => {
    const decoded = decodeFrame(data as Buffer, binary as boolean);
    expect(decoded).toMatchObject({ ok: false, code });
  });
});
