// Compile every .wgsl file of a folder with Tint (Dawn's null backend: no GPU needed) on a device with WebGPU's
// default limits and no optional features, as a browser gives any page, and make each compute pipeline.
// Prints one line per rejected shader and a summary; exit status 1 when any shader is rejected.
//   node check.mjs FOLDER
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { create, globals } from 'webgpu';

Object.assign(globalThis, globals);
const folder = process.argv[2];
const files = readdirSync(folder).filter((name) => name.endsWith('.wgsl')).sort();
const gpu = create(['backend=null']);
// A device that has seen an invalid shader module can crash Dawn later on: each rejection gets a fresh one.
let device = await (await gpu.requestAdapter()).requestDevice();
let rejected = 0;
for (const name of files) {
  const code = readFileSync(join(folder, name), 'utf8');
  if (process.env.CHECK_WGSL_TRACE) console.error(`checking ${name}`);
  const module = device.createShaderModule({ code });
  const info = await module.getCompilationInfo();
  let error = info.messages.filter((m) => m.type === 'error').map((m) => `${m.lineNum}:${m.linePos}: ${m.message}`)[0];
  if (!error) {
    for (const match of code.matchAll(/@compute[^\n]*\n?\s*fn\s+(\w+)/g)) {
      device.pushErrorScope('validation');
      device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: match[1] } });
      const failure = await device.popErrorScope();
      if (failure) {
        error = `pipeline ${match[1]}: ${failure.message.split('\n')[0]}`;
        break;
      }
    }
  }
  if (error) {
    rejected += 1;
    console.log(`REJECTED ${name}: ${error}`);
    device.destroy();
    device = await (await gpu.requestAdapter()).requestDevice();
  }
}
console.log(`check_wgsl: ${files.length} shaders, ${files.length - rejected} accepted by Tint, ${rejected} rejected`);
process.exit(rejected ? 1 : 0);
