// JSON Schemas of the OpenAI response objects the tests receive, after OpenAI's API reference:
// chat.completion, chat.completion.chunk, text_completion (whole and streamed), the model list
// and the error body. assertSchema(name, value) fails with ajv's list of violations.
import assert from 'node:assert/strict';
import Ajv from 'ajv';

const finishReason = { enum: ['stop', 'length'] };
const usage = {
  type: 'object',
  required: ['prompt_tokens', 'completion_tokens', 'total_tokens'],
  properties: {
    prompt_tokens: { type: 'integer', minimum: 0 },
    completion_tokens: { type: 'integer', minimum: 0 },
    total_tokens: { type: 'integer', minimum: 0 },
  },
};
const header = (object) => ({
  id: { type: 'string', minLength: 1 },
  object: { const: object },
  created: { type: 'integer', minimum: 0 },
  model: { type: 'string', minLength: 1 },
});
const tokenLogprob = {
  type: 'object',
  required: ['token', 'logprob', 'bytes'],
  properties: {
    token: { type: 'string' },
    logprob: { type: 'number', maximum: 0 },
    bytes: { type: ['array', 'null'], items: { type: 'integer', minimum: 0, maximum: 255 } },
  },
};
const chatLogprobs = {
  type: ['object', 'null'],
  required: ['content'],
  properties: {
    content: {
      type: ['array', 'null'],
      items: {
        ...tokenLogprob,
        required: [...tokenLogprob.required, 'top_logprobs'],
        properties: { ...tokenLogprob.properties, top_logprobs: { type: 'array', items: tokenLogprob } },
      },
    },
  },
};
const completionLogprobs = {
  type: ['object', 'null'],
  required: ['tokens', 'token_logprobs', 'top_logprobs'],
  properties: {
    tokens: { type: 'array', items: { type: 'string' } },
    token_logprobs: { type: 'array', items: { type: 'number', maximum: 0 } },
    top_logprobs: {
      type: 'array',
      items: { type: 'object', additionalProperties: { type: 'number', maximum: 0 } },
    },
    text_offset: { type: 'array', items: { type: 'integer', minimum: 0 } },
  },
};

const schemas = {
  'chat.completion': {
    type: 'object',
    required: ['id', 'object', 'created', 'model', 'choices', 'usage'],
    properties: {
      ...header('chat.completion'),
      usage,
      choices: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          required: ['index', 'message', 'finish_reason'],
          properties: {
            index: { type: 'integer', minimum: 0 },
            finish_reason: finishReason,
            logprobs: chatLogprobs,
            message: {
              type: 'object',
              required: ['role', 'content'],
              properties: { role: { const: 'assistant' }, content: { type: 'string' } },
            },
          },
        },
      },
    },
  },
  'chat.completion.chunk': {
    type: 'object',
    required: ['id', 'object', 'created', 'model', 'choices'],
    properties: {
      ...header('chat.completion.chunk'),
      usage: { oneOf: [usage, { type: 'null' }] },
      choices: {
        type: 'array',
        items: {
          type: 'object',
          required: ['index', 'delta', 'finish_reason'],
          properties: {
            index: { type: 'integer', minimum: 0 },
            finish_reason: { oneOf: [finishReason, { type: 'null' }] },
            logprobs: chatLogprobs,
            delta: {
              type: 'object',
              properties: { role: { const: 'assistant' }, content: { type: ['string', 'null'] } },
            },
          },
        },
      },
    },
  },
  text_completion: {
    type: 'object',
    required: ['id', 'object', 'created', 'model', 'choices'],
    properties: {
      ...header('text_completion'),
      usage: { oneOf: [usage, { type: 'null' }] },
      choices: {
        type: 'array',
        items: {
          type: 'object',
          required: ['index', 'text', 'finish_reason'],
          properties: {
            index: { type: 'integer', minimum: 0 },
            text: { type: 'string' },
            finish_reason: { oneOf: [finishReason, { type: 'null' }] },
            logprobs: completionLogprobs,
          },
        },
      },
    },
  },
  'model list': {
    type: 'object',
    required: ['object', 'data'],
    properties: {
      object: { const: 'list' },
      data: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          required: ['id', 'object', 'created', 'owned_by'],
          properties: {
            id: { type: 'string', minLength: 1 },
            object: { const: 'model' },
            created: { type: 'integer', minimum: 0 },
            owned_by: { type: 'string' },
          },
        },
      },
    },
  },
  error: {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['message', 'type', 'param', 'code'],
        properties: {
          message: { type: 'string', minLength: 1 },
          type: { type: 'string', minLength: 1 },
          param: { type: ['string', 'null'] },
          code: { type: ['string', 'null'] },
        },
      },
    },
  },
};

const ajv = new Ajv({ allErrors: true, strict: true });
const validators = Object.fromEntries(
  Object.entries(schemas).map(([name, schema]) => [name, ajv.compile(schema)]));

export function assertSchema(name, value) {
  const validate = validators[name];
  assert.ok(validate, `no schema "${name}"`);
  assert.ok(validate(value),
    `${name} violates its schema: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value)}`);
}
