import fc from 'fast-check';
import { z } from 'zod';

type Schema = Record<string, unknown> & {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
};

/** What is wrong with an answer to a fuzzed request (a 5xx, or a 4xx whose body is not exactly {"error": string}), or undefined. */
export function answerProblem(status: number, text: string): string | undefined {
  if (status >= 500) return `answered ${status}: ${text.slice(0, 200)}`;
  if (status < 400) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return `answered ${status} with a body that is not JSON: ${text.slice(0, 200)}`;
  }
  const keys = body && typeof body === 'object' ? Object.keys(body) : [];
  if (keys.length !== 1 || typeof (body as { error?: unknown }).error !== 'string') return `answered ${status} with ${text.slice(0, 200)}`;
  return undefined;
}

/** Values a schema accepts (mostly: refinements beyond JSON Schema are not modelled), from its zod source. */
export function validOf(schema: z.ZodType | undefined): fc.Arbitrary<unknown> {
  if (!schema) return fc.constant(undefined);
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', reused: 'inline', cycles: 'ref' }) as Schema;
  return fromJsonSchema(json, 0);
}

/** Valid values most of the time, otherwise anything JSON can hold (wrong types, missing and extra fields). */
export function bodyOf(schema: z.ZodType | undefined): fc.Arbitrary<unknown> {
  return fc.oneof({ arbitrary: validOf(schema), weight: 3 }, { arbitrary: fc.jsonValue({ maxDepth: 2 }), weight: 1 });
}

function fromJsonSchema(s: Schema, depth: number): fc.Arbitrary<unknown> {
  if (depth > 4) return fc.constant(null);
  if ('const' in s) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...s.enum);
  const options = s.anyOf ?? s.oneOf;
  if (options?.length) return fc.oneof(...options.map((o) => fromJsonSchema(o, depth + 1)));
  if (s.allOf?.length) return fromJsonSchema(s.allOf[0] as Schema, depth + 1);
  const type = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (type.length > 1) return fc.oneof(...type.map((t) => fromJsonSchema({ ...s, type: t }, depth)));
  switch (type[0]) {
    case 'string':
      return stringOf(s);
    case 'integer':
      return fc.integer({ min: num(s.minimum, -1_000), max: num(s.maximum, 1_000_000) });
    case 'number':
      return fc.double({ min: num(s.minimum, -1e6), max: num(s.maximum, 1e6), noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(s.items ? fromJsonSchema(s.items, depth + 1) : fc.jsonValue({ maxDepth: 1 }), {
        minLength: num(s.minItems, 0),
        maxLength: Math.min(num(s.maxItems, 4), num(s.minItems, 0) + 4),
      });
    case 'object': {
      const props = Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k, fromJsonSchema(v, depth + 1)]));
      return fc.record(props, { requiredKeys: (s.required ?? []).filter((k) => k in props) });
    }
    default:
      return fc.jsonValue({ maxDepth: 1 });
  }
}

function stringOf(s: Schema): fc.Arbitrary<string> {
  const min = num(s.minLength, 0);
  const max = Math.max(min, Math.min(num(s.maxLength, 40), min + 60));
  switch (s.format) {
    case 'uuid':
      return fc.uuid({ version: 7 });
    case 'email':
      return fc.emailAddress();
    case 'uri':
    case 'url':
      return fc.constantFrom('https://example.test/a.png', 'http://example.test/', 'javascript:alert(1)');
    case 'date-time':
      return fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }).map((d) => d.toISOString());
    default:
      return fc.oneof(
        fc.string({ minLength: min, maxLength: max }),
        fc.string({ minLength: min, maxLength: max, unit: 'grapheme' }),
        // What JSON carries and a database may refuse: NUL and other controls, a lone surrogate.
        fc.string({ minLength: min, maxLength: max, unit: fc.constantFrom('a', ' ', '\u0000', '\u001f', '\ud800', 'é') }),
      );
  }
}

const num = (value: unknown, fallback: number) => (typeof value === 'number' && Number.isFinite(value) ? value : fallback);
