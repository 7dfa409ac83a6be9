// Generates schema/value pairs with TypeBox's `Type.*` builders, casts each value with the
// real `Value.Cast`, and prints one JSON line per pair:
//
//   {"id": 7, "schema": {...}, "value": ..., "typebox": ...}      (cast succeeded)
//   {"id": 8, "schema": {...}, "value": ..., "error": "message"}  (TypeBox threw)
//
// The schema is plain JSON Schema: named definitions are inlined under `$defs` and referenced
// as `#/$defs/<Name>`, so opkit resolves the same references TypeBox is given. A value that
// TypeBox leaves out (`undefined`) is printed without its `value` key.
//
// The first lines are fixed pairs (ids `fixed-<n>`), then `count` generated ones.
//
// Deterministic: `node cast_pairs.js [seed] [count]` prints the same lines on every run
// (the generator draws only from its own seeded PRNG). Used by `core/tests/cast_typebox.rs`.
'use strict';

const { Type } = require('@sinclair/typebox');
const { Value } = require('@sinclair/typebox/value');

const seed = Number(process.argv[2] ?? 1);
const count = Number(process.argv[3] ?? 3000);

// ----- PRNG (mulberry32) ----------------------------------------------------------------------

function mulberry32(start) {
  let state = start >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = mulberry32(seed);
// Decides `uniqueItems` from a stream of its own, so adding the keyword left every other
// draw (and so every earlier pair's shape) as it was.
const randomUnique = mulberry32(seed ^ 0x5bd1e995);
const chance = (p) => random() < p;
const int = (low, high) => low + Math.floor(random() * (high - low + 1));
const pick = (items) => items[Math.floor(random() * items.length)];
/** Picks by weight from `[[weight, value], ...]`. */
function weighted(entries) {
  const total = entries.reduce((sum, [weight]) => sum + weight, 0);
  let roll = random() * total;
  for (const [weight, value] of entries) {
    roll -= weight;
    if (roll < 0) return value;
  }
  return entries[entries.length - 1][1];
}

const KEYS = ['a', 'b', 'c', 'id', 'name', 'kind', 'xs', 'n', 'tag', 'x-1'];
const WORDS = ['', 'x', 'red', 'green', 'dog', 'cat', 'hello', 'ab', 'abcdef'];

// ----- schemas --------------------------------------------------------------------------------

/** Named definitions of the current pair: name → schema carrying `$id: #/$defs/<name>`. */
let defs = {};

function stringSchema() {
  const options = {};
  if (chance(0.2)) options.minLength = int(1, 3);
  if (chance(0.1)) options.maxLength = int(3, 6);
  if (chance(0.2)) options.default = pick(['d', 'def', 'xyz']);
  return Type.String(options);
}

function numberSchema(integer) {
  const options = {};
  if (chance(0.2)) options.minimum = int(-2, 3);
  if (chance(0.15)) options.maximum = int(4, 9);
  if (chance(0.05)) options.multipleOf = 2;
  if (chance(0.2)) options.default = int(4, 8);
  return integer ? Type.Integer(options) : Type.Number(options);
}

function primitiveSchema() {
  return weighted([
    [4, () => stringSchema()],
    [3, () => numberSchema(false)],
    [3, () => numberSchema(true)],
    [2, () => Type.Boolean(chance(0.2) ? { default: true } : {})],
    [1, () => Type.Null()],
    [1, () => Type.Literal(pick(['on', 'off', 1, 2, true]))],
  ])();
}

function enumSchema() {
  const members = [...new Set(Array.from({ length: int(2, 4) }, () => pick(['red', 'green', 'blue', 'dog', 1, 2, 3])))];
  const literals = members.map((member) => Type.Literal(member));
  return literals.length === 1 ? literals[0] : Type.Union(literals);
}

function objectSchema(depth, tag, open = false) {
  const properties = {};
  if (tag !== undefined) properties.kind = Type.Literal(tag);
  const size = int(0, 4);
  for (let index = 0; index < size; index += 1) {
    const key = pick(KEYS);
    if (key in properties) continue;
    let property = schema(depth - 1);
    if (chance(0.3)) property = Type.Optional(property);
    properties[key] = property;
  }
  const options = {};
  const extra = open ? 1 : random();
  if (extra < 0.2) options.additionalProperties = false;
  else if (extra < 0.3) options.additionalProperties = schema(depth - 1);
  else if (extra < 0.33) options.additionalProperties = true;
  if (chance(0.05)) options.minProperties = 1;
  return Type.Object(properties, options);
}

function arraySchema(depth) {
  const options = {};
  if (chance(0.25)) options.minItems = int(1, 2);
  if (chance(0.2)) options.maxItems = int(options.minItems ?? 1, 3);
  if (randomUnique() < 0.25) options.uniqueItems = true;
  return Type.Array(schema(depth - 1), options);
}

function tupleSchema(depth) {
  return Type.Tuple(Array.from({ length: int(1, 3) }, () => schema(depth - 1)));
}

function unionSchema(depth) {
  const tagged = chance(0.35);
  const tags = ['cat', 'dog', 'bird'];
  const branches = Array.from({ length: int(2, 3) }, (_, index) =>
    tagged ? objectSchema(depth - 1, tags[index]) : schema(depth - 1),
  );
  const options = chance(0.05) ? { default: null } : {};
  return Type.Union(branches, options);
}

function refSchema(depth) {
  const names = Object.keys(defs);
  const ready = names.filter((name) => defs[name].$id !== undefined);
  if (ready.length === 0 || chance(0.2)) {
    const name = `D${names.length}`;
    defs[name] = Type.Unsafe({}); // placeholder while the target is built (no self-reference)
    defs[name] = { ...schema(Math.min(depth, 2)), $id: `#/$defs/${name}` };
    return Type.Ref(`#/$defs/${name}`);
  }
  return Type.Ref(`#/$defs/${pick(ready)}`);
}

function schema(depth) {
  if (depth <= 0) return weighted([[5, primitiveSchema], [1, enumSchema]])();
  return weighted([
    [5, () => primitiveSchema()],
    [2, () => enumSchema()],
    [6, () => objectSchema(depth)],
    [3, () => arraySchema(depth)],
    [2, () => tupleSchema(depth)],
    [4, () => unionSchema(depth)],
    [2, () => Type.Union([schema(depth - 1), Type.Null()])],
    [2, () => Type.Record(Type.String(), schema(depth - 1))],
    [2, () => refSchema(depth)],
    [1, () => Type.Intersect([objectSchema(depth - 1, undefined, true), objectSchema(depth - 1, undefined, true)])],
    [1, () => Type.Unknown()],
  ])();
}

// ----- values ---------------------------------------------------------------------------------

/** Any JSON value, for noise. */
function junk(depth) {
  return weighted([
    [2, () => null],
    [2, () => chance(0.5)],
    [3, () => pick([0, 1, -3, 2.5, 7, 1e3])],
    [3, () => pick(WORDS)],
    [1, () => (depth > 0 ? Array.from({ length: int(0, 3) }, () => junk(depth - 1)) : [])],
    [1, () => (depth > 0 ? Object.fromEntries(Array.from({ length: int(0, 3) }, () => [pick(KEYS), junk(depth - 1)])) : {})],
  ])();
}

/** A value shaped like `schema`, with noise at a rate of `noise` per node. */
function value(node, noise, depth = 0) {
  if (depth > 8) return junk(0);
  if (chance(noise)) return junk(2);
  const kind = node[Symbol.for('TypeBox.Kind')];
  switch (kind) {
    case 'String': {
      const word = pick(WORDS);
      return node.minLength && chance(0.7) ? word.padEnd(node.minLength, 'z') : word;
    }
    case 'Number':
      return chance(0.2) ? pick([0.5, 2.5, -1.25]) : int(-3, 10);
    case 'Integer':
      return chance(0.1) ? 1.5 : int(-3, 10);
    case 'Boolean':
      return chance(0.5);
    case 'Null':
      return null;
    case 'Literal':
      return node.const;
    case 'Unknown':
      return junk(2);
    case 'Union':
      return value(pick(node.anyOf), noise, depth + 1);
    case 'Intersect': {
      const parts = node.allOf.map((member) => value(member, noise, depth + 1));
      return parts.every((part) => part && typeof part === 'object' && !Array.isArray(part)) ? Object.assign({}, ...parts) : parts[0];
    }
    case 'Ref':
      return value(defs[node.$ref.slice('#/$defs/'.length)], noise, depth + 1);
    case 'Array': {
      let length = int(node.minItems ?? 0, node.maxItems ?? 3);
      if (chance(noise)) length = int(0, 4);
      return Array.from({ length }, () => value(node.items, noise, depth + 1));
    }
    case 'Tuple': {
      const items = (node.items ?? []).map((item) => value(item, noise, depth + 1));
      if (chance(noise)) items.push(junk(1));
      if (chance(noise) && items.length > 0) items.pop();
      return items;
    }
    case 'Record': {
      const inner = Object.values(node.patternProperties)[0];
      return Object.fromEntries(Array.from({ length: int(0, 3) }, () => [pick(KEYS), value(inner, noise, depth + 1)]));
    }
    case 'Object': {
      const result = {};
      const required = new Set(node.required ?? []);
      for (const [key, property] of Object.entries(node.properties)) {
        if (!required.has(key) && chance(0.5)) continue;
        if (required.has(key) && chance(noise)) continue;
        result[key] = value(property, noise, depth + 1);
      }
      if (chance(noise * 2)) result[pick(KEYS)] = junk(1);
      if (typeof node.additionalProperties === 'object' && chance(0.5)) {
        result[pick(['p', 'q'])] = value(node.additionalProperties, noise, depth + 1);
      }
      return result;
    }
    default:
      return junk(1);
  }
}

// ----- output ---------------------------------------------------------------------------------

/** The schema as plain JSON Schema, definitions under `$defs` (their `$id`s dropped). */
function plain(root) {
  const json = JSON.parse(JSON.stringify(root));
  const names = Object.keys(defs);
  if (names.length > 0) {
    json.$defs = {};
    for (const name of names) {
      const { $id, ...definition } = JSON.parse(JSON.stringify(defs[name]));
      json.$defs[name] = definition;
    }
  }
  return json;
}

/** Casts `input` to `root` with TypeBox and returns the pair's line. */
function pair(id, root, input) {
  const line = { id, schema: plain(root) };
  if (input !== undefined) line.value = input;
  try {
    const output = Value.Cast(root, Object.values(defs), structuredClone(input));
    if (output !== undefined) line.typebox = output;
  } catch (error) {
    line.error = String(error.message);
  }
  return JSON.stringify(line);
}

// Fixed pairs first (they draw nothing from the PRNG): valid `uniqueItems` arrays whose
// items become equal once their undeclared keys are dropped, which must come back unchanged.
defs = {};
const FIXED = [
  [
    Type.Array(Type.Object({ a: Type.Integer() }), { uniqueItems: true }),
    [{ a: 1, z: 1 }, { a: 1 }],
  ],
  [
    Type.Array(Type.Object({ b: Type.Integer({ minimum: 3 }) }), { uniqueItems: true, minItems: 2 }),
    [{ b: 7 }, { b: 7, x: 1 }],
  ],
];

const lines = FIXED.map(([root, input], index) => pair(`fixed-${index + 1}`, root, input));
for (let id = 0; id < count; id += 1) {
  defs = {};
  const root = schema(int(1, 4));
  const noise = pick([0, 0.1, 0.3, 0.6]);
  const input = chance(0.1) ? junk(2) : value(root, noise);
  lines.push(pair(id, root, input));
}
process.stdout.write(lines.join('\n') + '\n');
