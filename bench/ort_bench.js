#!/usr/bin/env node
// ONNX Runtime (npm onnxruntime-node, CPU execution provider) timing of a graph written by
// tools/export_onnx.py, after checking its outputs against the PyTorch ones stored beside it.
// A benchmark dependency only (bench/bench_models.sh installs it with
// `npm install --ignore-scripts onnxruntime-node` into $RAVLT_ORT_DIR, default build/ort).
//
//   node bench/ort_bench.js DIR [--threads 2] [--runs 3] [--warmup 1]
//
// Session: intraOpNumThreads = threads, interOpNumThreads 1, graphOptimizationLevel 'all',
// sequential execution. Prints one JSON line: median_ms, min_ms, max_ms, max_abs_diff (the
// largest |ORT - PyTorch| over the float outputs), label_agree (fraction of equal labels for
// an argmax output), peak_rss_mb (the process's maximum resident set), ort_version.
'use strict';
const fs = require('fs');
const path = require('path');

function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
}
const dir = process.argv[2];
if (!dir || dir.startsWith('--')) {
  console.error('usage: node bench/ort_bench.js DIR [--threads N] [--runs N] [--warmup N]');
  process.exit(2);
}
const threads = parseInt(arg('--threads', '2'), 10);
const runs = parseInt(arg('--runs', '3'), 10);
const warmup = parseInt(arg('--warmup', '1'), 10);
const ortDir = process.env.RAVLT_ORT_DIR || path.join(__dirname, '..', 'build', 'ort');
const ort = require(path.join(path.resolve(ortDir), 'node_modules', 'onnxruntime-node'));

function readF32(file) {
  const b = fs.readFileSync(file);
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}

async function main() {
  const ref = JSON.parse(fs.readFileSync(path.join(dir, 'ref.json'), 'utf8'));
  const [h, w] = ref.size;
  const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = { input: new ort.Tensor('float32', readF32(path.join(dir, 'input.bin')), [1, 3, h, w]) };
  // check against PyTorch
  let out = await session.run(feeds);
  let maxAbs = 0, agree = null;
  for (const o of ref.outputs) {
    const want = readF32(path.join(dir, o.file));
    const got = out[o.name].data;
    if (got.length !== want.length) throw new Error(`${o.name}: ${got.length} values, PyTorch ${want.length}`);
    if (o.labels) {
      let same = 0;
      for (let i = 0; i < want.length; i++) same += Number(got[i]) === want[i] ? 1 : 0;
      agree = same / want.length;
    } else {
      for (let i = 0; i < want.length; i++) maxAbs = Math.max(maxAbs, Math.abs(got[i] - want[i]));
    }
  }
  out = null;
  for (let r = 1; r < warmup; r++) await session.run(feeds); // the check was the first warm-up
  const times = [];
  for (let r = 0; r < runs; r++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  const n = times.length;
  const med = n % 2 ? times[(n - 1) / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
  console.log(JSON.stringify({
    model: ref.model, part: ref.part, size: ref.size, threads, runs,
    median_ms: med, min_ms: times[0], max_ms: times[n - 1],
    max_abs_diff: maxAbs, label_agree: agree,
    peak_rss_mb: process.resourceUsage().maxRSS / 1024, ort_version: ort.env.versions.common,
  }));
}
main().catch((e) => { console.error(`ort_bench: ${dir}: ${e.message || e}`); process.exit(1); });
