/** The one-pass check of a JSON body's text: what it refuses, and what it must not. */
import { describe, expect, it } from 'vitest';
import { jsonTextProblem } from '../../src/server/json-text.js';

describe('jsonTextProblem and repeated member names', () => {
  it.each([
    ['{"amount":1,"amount":2}', '"amount"'],
    ['{"a":1,"\\u0061":2}', '"a"'],
    ['{"a\\"b":1,"a\\"b":2}', '"a\\"b"'],
    ['{"a":1,"b":{"c":1,"c":2}}', '"c"'],
    ['[{"x":1,"y":[1,"x"],"x":3}]', '"x"'],
    ['{ "a" : 1 ,\n "a" : 1 }', '"a"'],
  ])('refuses %s, naming %s', (text, name) => {
    expect(jsonTextProblem(text)).toBe(`the body names the member ${name} twice in one object`);
  });

  it.each(['{"a":{"a":1},"b":[{"a":1},{"a":2}]}', '{"a":"a","b":"a"}', '["a","a",{"a":"a"}]', '{"reference":"inv, \\"q\\": 7","q":1}', '{"a":1,"A":2,"a ":3}'])(
    'accepts %s: one name per object, values and array items free',
    (text) => {
      expect(jsonTextProblem(text)).toBeUndefined();
      expect(() => JSON.parse(text)).not.toThrow();
    },
  );
});

describe('jsonTextProblem and numbers beyond a double', () => {
  it.each(['{"x":1e400}', '[-1E+999]', '{"a":{"b":[0.5e309]}}'])('refuses %s, which would fingerprint as null', (text) => {
    expect(jsonTextProblem(text)).toMatch(/^the body holds the number -?[0-9.]+[eE][+-]?[0-9]+, beyond the range of a double$/);
  });

  it.each(['{"x":1e308}', '{"x":-2.5E-400}', '{"e":"1e400","E":1}', '[1e-5,"x e y"]', '{"a":true,"b":false,"c":null}', '[true,false]'])(
    'accepts %s: in range, or not a number',
    (text) => {
      expect(jsonTextProblem(text)).toBeUndefined();
    },
  );
});
