// The reference engine's embeddings of token-id prompts, for tests/engine/reference/*.json:
// llama.cpp's pooled embedding (the file's pooling_type) of each prompt, through
// node-llama-cpp's bindings (CPU build).
//
//   NODE_PATH=DIR/node_modules node embeddings.mjs MODEL.gguf PROMPTS.json > OUT.json
//
// PROMPTS.json is an array of token-id arrays; OUT.json is {prompts, embeddings}.
import {createRequire} from "module";
import fs from "fs";
import path from "path";

const require = createRequire(path.join(process.env.NODE_PATH || ".", "x.js"));
const {getLlama} = await import(require.resolve("node-llama-cpp"));
const [modelPath, promptsPath] = process.argv.slice(2);
const prompts = JSON.parse(fs.readFileSync(promptsPath, "utf8"));

const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath});
const context = await model.createEmbeddingContext({contextSize: 1024, threads: 2});
const embeddings = [];
for (const ids of prompts) {
  const e = await context.getEmbeddingFor(ids);
  embeddings.push(Array.from(e.vector, (x) => Number(x.toPrecision(7))));
}
console.log(JSON.stringify({prompts, embeddings}));
