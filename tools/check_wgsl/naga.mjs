// Translate every .wgsl file of a folder to MSL and HLSL with naga's writers (npm naga-wasm: the naga that wgpu
// uses on Metal and D3D12, compiled to WebAssembly), as wgpu does when it makes a compute pipeline there.
// The shaders are meant to be those of a run under wk.init(webgpu_profile="baseline"): a shader that uses what the
// profile leaves out (f64, i64/u64, f16, atomic<f32>, subgroup operations) or an `enable` directive is reported as
// a failure of the profile and never sent to a writer (Metal has no f64: naga's MSL writer panics on it).
// Prints one line per rejected shader (file, writer, naga's message) and a summary; exit status 1 on any rejection.
//   node naga.mjs FOLDER
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { nagaVersion, parseWgsl, validate, writeHlsl, writeMsl } from 'naga-wasm';

// The lowest targets wgpu's backends use: MSL 2.0 (macOS 10.13, iOS 11) and shader model 5.1 (FXC on D3D12).
const MSL_VERSION = [2, 0];
const HLSL_SHADER_MODEL = '5_1';

// What the baseline profile leaves out, as it shows in WGSL source (comments stripped first): the types by name,
// literals typed by suffix (`1.0lf`, `2li`, `3lu`, `0.5h`), subgroup built-in functions and values.
const OUTSIDE_BASELINE = [
  [/\bf64\b|\b\d[\d.]*(?:[eE][+-]?\d+)?lf\b/, 'f64 (device feature shader-f64)'],
  [/\b[iu]64\b|\b(?:0[xX][\da-fA-F]+|\d+)l[iu]\b/, '64-bit integers (device feature shader-int64)'],
  [/\bf16\b|\b\d[\d.]*(?:[eE][+-]?\d+)?h\b/, 'f16 (device feature shader-f16)'],
  [/\batomic\s*<\s*f32\s*>/, 'atomic<f32> (device feature shader-float32-atomic)'],
  [/\b(?:subgroup|quad)[A-Z]\w*\s*\(|\bsubgroup_\w+\b/, 'subgroup operations (device feature subgroup)'],
  [/^\s*enable\b[^;]*;/m, 'an enable directive (an optional WebGPU feature)'],
];

function withoutComments(code) {
  return code.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, '');
}

// The first feature of `code` that the baseline profile leaves out, or undefined.
function outsideBaseline(code) {
  const text = withoutComments(code);
  return OUTSIDE_BASELINE.find(([pattern]) => pattern.test(text))?.[1];
}

// naga's message for a failure: its full report for naga's own errors (they name the line), else the JS error.
// A panic in naga traps the WebAssembly instance; later shaders are still tried, and the run fails either way.
function message(error) {
  if (error instanceof WebAssembly.RuntimeError) return `naga panicked (${error.message})`;
  return (error.formatted ?? String(error.message ?? error)).trimEnd();
}

// The shader of each pipeline that could be made from `code`: wgpu replaces every pipeline-overridable constant
// by its value before naga's MSL and HLSL writers run (which reject `override`), so each `override` becomes a
// `const` of its default, and a bool override is also tried with the other value (wgkern's runtime makes the
// pipelines of a range task with `wk_flat` true and false). Returns [[label, code], ...].
function pipelineVariants(code) {
  const declaration = /^(\s*)override\s+(\w+)\s*:\s*(\w+)\s*=\s*([^;]+);/gm;
  let variants = [['', code]];
  for (const [, , name, type, value] of code.matchAll(declaration)) {
    const values = type === 'bool' ? [value.trim(), value.trim() === 'true' ? 'false' : 'true'] : [value.trim()];
    const pattern = new RegExp(`^(\\s*)override\\s+${name}\\s*:[^;]*;`, 'm');
    variants = variants.flatMap(([label, text]) => values.map((v) => [
      `${label}${label ? ', ' : ''}${name}=${v}`, text.replace(pattern, `$1const ${name}: ${type} = ${v};`)]));
  }
  const left = variants[0][1].match(/^\s*override\b[^\n]*/m);
  if (left) throw new Error(`an override the check cannot give a value: ${left[0].trim()}`);
  return variants;
}

// [] when naga parses, validates and writes each pipeline of `code` as MSL and as HLSL; else one
// [stage, message] per failure.
function translate(code) {
  const outside = outsideBaseline(code);
  if (outside) {
    const why = `uses ${outside}, which webgpu_profile="baseline" leaves out: never sent to naga's MSL writer`;
    return [['profile', why]];
  }
  let variants;
  try {
    variants = pipelineVariants(code);
  } catch (error) {
    return [['overrides', error.message]];
  }
  const failures = [];
  for (const [label, text] of variants) {
    const where = (stage) => (label ? `${stage}, ${label}` : stage);
    let module;
    let info;
    try {
      module = parseWgsl(text);
      info = validate(module);
    } catch (error) {
      failures.push([where(module ? 'validation' : 'parse'), message(error)]);
      info?.free();
      module?.free();
      continue;
    }
    const writers = [
      [`MSL ${MSL_VERSION.join('.')}`, () => writeMsl(module, info, { langVersion: MSL_VERSION })],
      [`HLSL SM ${HLSL_SHADER_MODEL.replace('_', '.')}`,
        () => writeHlsl(module, info, { shaderModel: HLSL_SHADER_MODEL })],
    ];
    for (const [stage, write] of writers) {
      try {
        write();
      } catch (error) {
        failures.push([where(stage), message(error)]);
      }
    }
    info.free();
    module.free();
  }
  return failures;
}

const folder = process.argv[2];
const files = readdirSync(folder).filter((name) => name.endsWith('.wgsl')).sort();
if (!files.length) {
  console.log(`check_wgsl naga: no .wgsl file in ${folder} (was the suite run with WK_DUMP_WGSL set to it?)`);
  process.exit(1);
}
let rejected = 0;
for (const name of files) {
  const failures = translate(readFileSync(join(folder, name), 'utf8'));
  if (failures.length) rejected += 1;
  for (const [stage, text] of failures) {
    console.log(`REJECTED ${join(folder, name)} (${stage}): ${text.split('\n').join('\n    ')}`);
  }
}
const translated = files.length - rejected;
console.log(`check_wgsl naga ${nagaVersion}: ${files.length} shaders, ${translated} translated to MSL and HLSL, ` +
            `${rejected} rejected`);
process.exit(rejected ? 1 : 0);
