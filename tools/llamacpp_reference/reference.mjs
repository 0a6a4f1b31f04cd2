// The reference engine's answers on a model file, for tests/model/reference/*.json: the
// last-position logits after a prompt of token ids, and the greedy continuation of it, computed
// by llama.cpp through node-llama-cpp's bindings (CPU build, no GPU).
//
//   NODE_PATH=DIR/node_modules node reference.mjs MODEL.gguf IDS N_GREEDY > OUT.json
//
// DIR holds `npm install node-llama-cpp@3.22.1` (llama.cpp tag v0.5.0, its prebuilt CPU
// binaries); tests/model/reference/README.md says how the files were made.
import {createRequire} from "module";
import path from "path";

const require = createRequire(path.join(process.env.NODE_PATH || ".", "x.js"));
const {getLlama} = await import(require.resolve("node-llama-cpp"));
const [modelPath, idsArg, greedyArg] = process.argv.slice(2);
const prompt = idsArg.split(",").map(Number);
const nGreedy = Number(greedyArg || 64);

const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath});
const context = await model.createContext({contextSize: 1024, batchSize: 512, threads: 2});
const sequence = context.getSequence();

// Logits of the last token of `tokens`, fed after everything evaluated before.
async function nextLogits(tokens) {
  const items = tokens.map((t, i) => i + 1 === tokens.length ? [t, {generateNext: {logits: true}}] : t);
  const results = await sequence.controlledEvaluate(items);
  const logits = [];
  for (const [token, value] of results[results.length - 1].next.logits) logits[token] = value;
  return logits;
}

function argmax(v) {
  let best = 0;
  for (let i = 1; i < v.length; ++i) if (v[i] > v[best]) best = i;
  return best;
}

const logits = await nextLogits(prompt);
const greedy = [argmax(logits)];
while (greedy.length < nGreedy) greedy.push(argmax(await nextLogits([greedy[greedy.length - 1]])));
console.log(JSON.stringify({prompt, logits, greedy}));
