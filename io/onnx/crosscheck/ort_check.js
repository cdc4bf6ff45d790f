// Runs every model of DIR/manifest.json (written by io/onnx's tests) in ONNX
// Runtime and compares its outputs with flowebm's. Usage:
//   NODE_PATH=FOLDER/node_modules node ort_check.js DIR
// where FOLDER holds `ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node@1.30.0`.
// Every model runs with ONNX Runtime's default optimisation, as a user's
// session would (round 81 A1: 'basic' for float64 hid that the default
// fused x·Sigmoid(x) into a float-only op). Exits 1 on any mismatch.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// readNpy reads a little-endian float32/float64 .npy file (C order).
function readNpy(file) {
  const b = fs.readFileSync(file);
  if (b.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(file + ': not a .npy file');
  const major = b[6];
  const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + hlen;
  const header = b.toString('latin1', major === 1 ? 10 : 12, start);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').filter(s => s.trim() !== '').map(Number);
  const body = b.subarray(start);
  let data;
  if (descr === '<f8') data = new Float64Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.length));
  else if (descr === '<f4') data = new Float32Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.length));
  else throw new Error(file + ': dtype ' + descr + ', want <f4 or <f8');
  return { shape, data, type: descr === '<f8' ? 'float64' : 'float32' };
}

async function main() {
  const dir = process.argv[2];
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
  let failed = 0;
  for (const f of manifest) {
    const session = await ort.InferenceSession.create(path.join(dir, f.model));
    const feeds = {};
    for (const [name, file] of Object.entries(f.inputs)) {
      const a = readNpy(path.join(dir, file));
      feeds[name] = new ort.Tensor(a.type, a.data, a.shape);
    }
    const results = await session.run(feeds);
    const tol = f.dtype === 'f64' ? 1e-10 : 1e-5;
    let worst = 0;
    for (const [name, file] of Object.entries(f.outputs)) {
      const want = readNpy(path.join(dir, file));
      const got = results[name];
      if (!got) throw new Error(f.model + ': no output ' + name);
      if (got.dims.join(',') !== want.shape.join(',')) {
        console.log(`${f.model}: output ${name} has shape [${got.dims}], want [${want.shape}]`);
        failed++;
        continue;
      }
      for (let i = 0; i < want.data.length; i++) {
        const rel = Math.abs(got.data[i] - want.data[i]) / Math.max(1, Math.abs(want.data[i]));
        if (!(rel <= worst)) worst = rel;
      }
    }
    const ok = worst <= tol;
    if (!ok) failed++;
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${f.model}: largest relative difference ${worst.toExponential(2)} (tolerance ${tol})`);
  }
  if (failed > 0) {
    console.log(`${failed} of ${manifest.length} models differ`);
    process.exit(1);
  }
  console.log(`all ${manifest.length} models match`);
}

main().catch(e => { console.error(e); process.exit(1); });
