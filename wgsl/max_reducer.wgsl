// wgkern generic max-reducer: interprets the bytecode of wgkern/sizing/bytecode.py (one pipeline per device).
// One invocation lane per point of a job's cross product, 4 points per invocation step (vec4 lanes), grid-stride
// so workgroup counts stay <= 65535. Reads go to one `data` binding: the containers of a batch at word bases.
// mode 0 (max): atomicMax(out[2*slot], max(value, 0)); mode 1 (value): out[2*slot] = bits of the value;
// mode 2 (slice): code = (base, signed): atomicMax of the order-preserving key of data[base + lo.x ..)
// (signed: bits ^ 0x80000000), the common `max_i n[i]` without interpretation; the host undoes the key.
// Any checked-arithmetic overflow, out-of-bounds index or unsigned read above i32 ORs a bit into out[2*slot+1];
// the host then recomputes that job exactly (never a wrapped result).

struct Job {
    code: u32,       // first word of this job's bytecode in `code`
    len: u32,        // number of words
    naxes: u32,
    total: u32,      // points of the cross product
    slot: u32,       // result pair index in `out`
    mode: u32,
    stride: u32,     // invocations in the dispatch (grid stride)
    pad: u32,
    lo: vec4<i32>,   // first coordinate of each axis
    ext: vec4<u32>,  // extent of each axis (last axis varies fastest)
}

@group(0) @binding(0) var<storage, read> code: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<atomic<u32>>;
@group(0) @binding(2) var<uniform> job: Job;
@group(0) @binding(3) var<storage, read> data: array<u32>;   // the containers a batch reads, each at a base

const OP_CONST: u32 = 1u;
const OP_VAR: u32 = 2u;
const OP_READ: u32 = 3u;
const OP_INDEX: u32 = 4u;
const OP_ADD: u32 = 5u;
const OP_SUB: u32 = 6u;
const OP_MUL: u32 = 7u;
const OP_MAX: u32 = 8u;
const OP_GUARD: u32 = 9u;
const OP_CLAMP0: u32 = 10u;
const OP_READ_VAR: u32 = 11u;
const OP_ENDGUARD: u32 = 12u;
const OP_FLOORDIV: u32 = 13u;
const GUARDS: u32 = 8u;
const FLAG_OVERFLOW: u32 = 1u;
const FLAG_OUT_OF_BOUNDS: u32 = 2u;
const FLAG_UNSIGNED_RANGE: u32 = 4u;
const STACK: u32 = 18u;
alias V = vec4<i32>;
const I32_MIN: i32 = -2147483647 - 1;

fn load(base: u32, i: u32) -> u32 { return data[base + i]; }

fn load4(base: u32, i: V) -> vec4<u32> {
    let j = vec4<u32>(base) + bitcast<vec4<u32>>(i);
    return vec4<u32>(data[j.x], data[j.y], data[j.z], data[j.w]);
}

// Element `index` (one per lane, checked against `extent`) of the container at word `b` of `data`.
fn read4(index: V, extent: u32, b: u32, signed: bool, act: vec4<bool>, flags: ptr<function, u32>) -> V {
    let bad = bitcast<vec4<u32>>(index) >= vec4<u32>(extent);
    if (any(bad & act)) { *flags |= FLAG_OUT_OF_BOUNDS; }
    let w = load4(b, select(index, V(0), bad));
    let big = (w > vec4<u32>(0x7fffffffu)) & vec4<bool>(!signed);
    if (any(big & act)) { *flags |= FLAG_UNSIGNED_RANGE; }
    return select(bitcast<V>(w), V(0), big);
}

// Runs the job's code on the 4 points first .. first + 3 at once (one vec4 lane each; lanes past the end and
// lanes whose guard failed are masked out of flags and results). The top of the stack lives in `acc`.
fn run4(first: u32, st: ptr<function, array<V, STACK>>, masks: ptr<function, array<vec4<bool>, GUARDS>>,
        coord: ptr<function, array<V, 4>>) -> vec2<u32> {   // (result: max key or value, flags)
    let points = vec4<u32>(first) + vec4<u32>(0u, 1u, 2u, 3u);
    var act = points < vec4<u32>(job.total);
    let live = act;
    if (job.naxes == 1u) {
        (*coord)[0] = V(job.lo[0]) + bitcast<V>(points);
    } else {
        var rest = points;
        for (var k = i32(job.naxes) - 1; k >= 0; k--) {
            let e = vec4<u32>(job.ext[k]);
            (*coord)[k] = V(job.lo[k]) + bitcast<V>(rest % e);
            rest = rest / e;
        }
    }
    var msp = 0u;
    var sp = 0u;
    var acc = V(0);
    var flags = 0u;
    var pc = job.code;
    let end = job.code + job.len;
    loop {
        if (pc >= end) { break; }
        let op = code[pc];
        switch op {
            case OP_CONST: { (*st)[sp] = acc; sp++; acc = V(bitcast<i32>(code[pc + 1u])); pc += 2u; }
            case OP_VAR: { (*st)[sp] = acc; sp++; acc = (*coord)[code[pc + 1u]]; pc += 2u; }
            case OP_READ_VAR: {   // k extent base signed: push data[base + coord[k]] of a 1-D container
                (*st)[sp] = acc; sp++;
                acc = read4((*coord)[code[pc + 1u]], code[pc + 2u], code[pc + 3u], code[pc + 4u] != 0u, act, &flags);
                pc += 5u;
            }
            case OP_INDEX: {
                let bad = bitcast<vec4<u32>>(acc) >= vec4<u32>(code[pc + 1u]);
                if (any(bad & act)) { flags |= FLAG_OUT_OF_BOUNDS; }
                acc = select(acc, V(0), bad);
                pc += 2u;
            }
            case OP_READ: {   // base signed: the flat index on top is in bounds (INDEX)
                acc = read4(acc, 0xffffffffu, code[pc + 1u], code[pc + 2u] != 0u, act, &flags);
                pc += 3u;
            }
            case OP_ADD: {
                sp--; let a = (*st)[sp]; let r = a + acc;
                if (any((((a ^ r) & (acc ^ r)) < V(0)) & act)) { flags |= FLAG_OVERFLOW; }
                acc = r; pc += 1u;
            }
            case OP_SUB: {
                sp--; let a = (*st)[sp]; let r = a - acc;
                if (any((((a ^ acc) & (a ^ r)) < V(0)) & act)) { flags |= FLAG_OVERFLOW; }
                acc = r; pc += 1u;
            }
            case OP_MUL: {
                sp--; let a = (*st)[sp]; let b = acc; let r = a * b;
                let safe_a = select(a, V(1), a == V(0));
                let bad = (a != V(0)) & (((a == V(-1)) & (b == V(I32_MIN))) | ((b == V(-1)) & (a == V(I32_MIN)))
                                         | (r / safe_a != b));
                if (any(bad & act)) { flags |= FLAG_OVERFLOW; }
                acc = r; pc += 1u;
            }
            case OP_MAX: { sp--; acc = max((*st)[sp], acc); pc += 1u; }
            case OP_CLAMP0: { acc = max(acc, V(0)); pc += 1u; }
            case OP_FLOORDIV: {   // d >= 1: floor(acc / d), truncation made one lower when inexact below 0
                let d = V(bitcast<i32>(code[pc + 1u]));
                let q = acc / d;
                acc = q - select(V(0), V(1), (q * d != acc) & (acc < V(0)));
                pc += 2u;
            }
            case OP_GUARD: {   // k skip: lanes whose (*coord)[k] is outside [below, acc) drop out until ENDGUARD
                let v = (*coord)[code[pc + 1u]];
                let inside = act & ((*st)[sp - 1u] <= v) & (v < acc);
                if (!any(inside) || msp >= GUARDS) {
                    if (msp >= GUARDS) { flags |= FLAG_OVERFLOW; }
                    sp -= 1u; acc = V(0); pc = job.code + code[pc + 2u];
                } else {
                    (*masks)[msp] = act; msp++; act = inside;
                    sp -= 2u; acc = (*st)[sp]; pc += 3u;
                }
            }
            case OP_ENDGUARD: {
                acc = select(V(0), max(acc, V(0)), act);
                msp--; act = (*masks)[msp];
                pc += 1u;
            }
            default: { flags |= FLAG_OVERFLOW; pc = end; }
        }
    }
    if (job.mode == 1u) { return vec2<u32>(bitcast<u32>(acc.x), flags); }
    let best = max(select(V(0), acc, live), V(0));
    return vec2<u32>(u32(max(max(best.x, best.y), max(best.z, best.w))), flags);
}

fn slice_max(first: u32) -> u32 {
    let b = code[job.code];
    let flip = select(0u, 0x80000000u, code[job.code + 1u] != 0u);
    let start = u32(job.lo.x);
    var best = 0u;
    for (var p = first; p < job.total; p += job.stride) { best = max(best, load(b, start + p) ^ flip); }
    return best;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (job.mode == 2u) {
        let key = slice_max(gid.x);
        if (key > 0u) { atomicMax(&out[2u * job.slot], key); }
        return;
    }
    var flags = 0u;
    var best = 0u;
    var st: array<V, STACK>;          // st[0] holds a dummy; st[1..sp-1] the entries below the top (`acc`)
    var masks: array<vec4<bool>, GUARDS>;
    var coord: array<V, 4>;
    for (var first = gid.x * 4u; first < job.total; first += job.stride * 4u) {
        let r = run4(first, &st, &masks, &coord);
        flags |= r.y;
        if (job.mode == 1u) {
            atomicStore(&out[2u * job.slot], r.x);
        } else {
            best = max(best, r.x);
        }
    }
    if (best > 0u) { atomicMax(&out[2u * job.slot], best); }
    if (flags != 0u) { atomicOr(&out[2u * job.slot + 1u], flags); }
}
