import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { answerSchemaOf } from '../../../src/llm/answer-schema';
import { consolidationAnswerSchema } from '../../../src/sleep/consolidation/operations';
import { anthropicSchemaProblem } from '../../doubles/anthropic-server';

describe('answerSchemaOf', () => {
  it('makes the consolidation schema one the Anthropic subset accepts', () => {
    const raw = z.toJSONSchema(consolidationAnswerSchema, { io: 'input' });
    // The raw conversion is refused: zod writes bounds and leaves objects open.
    expect(anthropicSchemaProblem(raw)).toBeDefined();
    const schema = answerSchemaOf(consolidationAnswerSchema)!;
    expect(anthropicSchemaProblem(schema)).toBeUndefined();
    expect(schema).not.toHaveProperty('$schema');
  });

  it('closes objects, turns type lists into anyOf and says dropped bounds in words', () => {
    const schema = answerSchemaOf(
      z.object({
        id: z.union([z.number(), z.string()]),
        score: z.number().min(0).max(1).describe('How sure'),
        notes: z.array(z.string().min(1).max(40)).min(2).max(5),
        when: z.string().datetime(),
        code: z.string().regex(/^[A-Z]+$/),
        nested: z.object({ a: z.boolean() }).optional(),
      }),
    )!;
    const props = schema.properties as Record<string, Record<string, unknown>>;
    expect(schema.additionalProperties).toBe(false);
    expect(props.id!.anyOf).toEqual([{ type: 'number' }, { type: 'string' }]);
    expect(props.score).toEqual({ type: 'number', description: 'How sure (at least 0, at most 1)' });
    expect(props.notes).toMatchObject({
      type: 'array',
      description: '(at least 2 items, at most 5 items)',
      items: { type: 'string', description: '(at least 1 character, at most 40 characters)' },
    });
    expect(props.notes).not.toHaveProperty('minItems');
    expect(props.when).toMatchObject({ type: 'string', format: 'date-time' });
    expect(props.code).not.toHaveProperty('pattern');
    expect(props.nested).toMatchObject({ additionalProperties: false, properties: { a: { type: 'boolean' } } });
    expect(anthropicSchemaProblem(schema)).toBeUndefined();
  });

  it("sends no schema for a map with keys of the model's choosing, or a top level that is not an object", () => {
    expect(answerSchemaOf(z.object({ attributes: z.record(z.string(), z.string().nullable()) }))).toBeUndefined();
    expect(answerSchemaOf(z.array(z.string()))).toBeUndefined();
  });

  it('is memoized per schema', () => {
    const schema = z.object({ facts: z.array(z.string()) });
    expect(answerSchemaOf(schema)).toBe(answerSchemaOf(schema));
  });
});
