import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { timestamptzToIso } from '../src/db.ts';

/** A timestamptz as PostgreSQL writes it in a UTC session: trailing zeros of the fraction dropped, no fraction when it is zero. */
function asPostgresWrites(ms: number, micros: number): string {
  const iso = new Date(ms).toISOString();
  const fraction = `${iso.slice(20, 23)}${String(micros).padStart(3, '0')}`.replace(/0+$/, '');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction ? `.${fraction}` : ''}+00`;
}

describe('timestamptz as ISO strings', () => {
  it('answers what Date makes of every UTC timestamp PostgreSQL writes, without a Date', () => {
    const years1000to9999 = fc.integer({ min: Date.UTC(1000, 0, 1), max: Date.UTC(9999, 11, 31, 23, 59, 59, 999) });
    fc.assert(
      fc.property(years1000to9999, fc.integer({ min: 0, max: 999 }), (ms, micros) => {
        const written = asPostgresWrites(ms, micros);
        expect(timestamptzToIso(written)).toBe(new Date(written).toISOString());
        expect(timestamptzToIso(written)).toBe(new Date(ms).toISOString());
      }),
      { numRuns: 2_000 },
    );
  });

  it('reads other forms through Date and leaves what Date cannot read as it is', () => {
    expect(timestamptzToIso('2026-11-25 11:50:13.5+01')).toBe('2026-11-25T10:50:13.500Z');
    expect(timestamptzToIso('2026-11-25 16:20:13+05:30')).toBe('2026-11-25T10:50:13.000Z');
    expect(timestamptzToIso('infinity')).toBe('infinity');
    expect(timestamptzToIso('-infinity')).toBe('-infinity');
  });
});
