"""Textures (lang/texture.py, frontend/texture.py): Taichi's `ti.Texture` emulated on a texel ndarray, on every
arch. Sampling is checked against a numpy bilinear reference (texel centres at (i + 0.5) / size, repeat
addressing, as Taichi's Vulkan sampler), fetch/load/store texel by texel, host transfers by round trips, formats
by the values they keep, and misuse by the messages it gets. (No `from __future__ import annotations`: kernels
here annotate parameters with local values, `num_dimensions=dims`.)"""
import numpy as np
import pytest

import wgkern as wk
from tests.error_bounds import assert_within, f32_bound
from wgkern.lang.texture import FORMATS, Encoding, Format, quantise


def bilinear_reference(texels: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """Linear filtering in every axis of `texels` (*shape, channels) at normalised `uv` (..., dims), repeat
    addressing; float64."""
    dims = texels.ndim - 1
    shape = texels.shape[:dims]
    position = uv * np.array(shape) - 0.5
    lower = np.floor(position)
    weight = position - lower
    lower = lower.astype(np.int64)
    out = np.zeros(uv.shape[:-1] + (texels.shape[-1],))
    for corner in np.ndindex(*(2,) * dims):
        index = tuple((lower[..., d] + corner[d]) % shape[d] for d in range(dims))
        w = np.prod([weight[..., d] if corner[d] else 1 - weight[..., d] for d in range(dims)], axis=0)
        out += w[..., None] * texels[index]
    return out


def rgba(values: np.ndarray) -> np.ndarray:
    """Channels a format lacks read as (0, 0, 0, 1)."""
    out = np.zeros(values.shape[:-1] + (4,))
    out[..., 3] = 1.0
    out[..., :values.shape[-1]] = values
    return out


# ---- sampling ------------------------------------------------------------------------------------------------

def test_sample_lod_matches_a_bilinear_reference_with_repeat_addressing(arch):
    rng = np.random.default_rng(1)
    tex = wk.Texture(wk.Format.rgba32f, (7, 5))
    texels = rng.random((7, 5, 4), dtype=np.float32)
    tex.from_numpy(texels)
    uv = rng.uniform(-0.7, 1.7, (64, 2)).astype(np.float32)       # outside [0, 1] wraps around
    uv[:4] = [[0.0, 0.0], [1.0, 1.0], [0.5 / 7, 0.5 / 5], [0.5, 0.5]]
    out = np.zeros((64, 4), np.float32)

    @wk.kernel
    def sample(t: wk.types.texture(num_dimensions=2), uv: wk.types.ndarray(), out: wk.types.ndarray()):
        for k in range(uv.shape[0]):
            c = t.sample_lod(wk.Vector([uv[k, 0], uv[k, 1]]), 0.0)
            for ch in wk.static(range(4)):
                out[k, ch] = c[ch]

    sample(tex, uv, out)
    assert "t: texture rgba32f 2-D texture" in sample.ir() and "t.texels: ndarray f32" in sample.ir()
    expected = bilinear_reference(texels.astype(np.float64), uv.astype(np.float64))
    np.testing.assert_allclose(out, expected, atol=2e-5)
    # a texel centre gives the texel: uv * size - 0.5 is 0 to within 3 operations, the weights' error then
    # moves the blend of 4 texels (4 products, 3 sums) by at most that much times the largest texel
    assert_within(out[2], texels[0, 0], f32_bound(10, np.abs(texels).max()), "texel centre")


@pytest.mark.parametrize("fmt, shape", [(Format.r32f, (9,)), (Format.rg32f, (4, 3, 5))])
def test_sample_lod_in_one_and_three_dimensions(arch, fmt, shape):
    rng = np.random.default_rng(len(shape))
    tex = wk.Texture(fmt, shape)
    texels = rng.random(shape + (FORMATS[fmt].channels,), dtype=np.float32)
    tex.from_numpy(texels)
    dims = len(shape)
    uv = rng.uniform(-0.3, 1.3, (32, dims)).astype(np.float32)
    out = np.zeros((32, 4), np.float32)

    @wk.kernel
    def sample(t: wk.types.texture(num_dimensions=dims), uv: wk.types.ndarray(), out: wk.types.ndarray()):
        for k in range(uv.shape[0]):
            if wk.static(dims == 1):
                c = t.sample_lod(uv[k, 0], 0.0)              # a 1-D texture takes a scalar coordinate
                out[k, 0], out[k, 1], out[k, 2], out[k, 3] = c
            else:
                c = t.sample_lod(wk.Vector([uv[k, 0], uv[k, 1], uv[k, 2]]), 2.0)   # one level: lod selects nothing
                out[k, 0], out[k, 1], out[k, 2], out[k, 3] = c

    sample(tex, uv, out)
    np.testing.assert_allclose(out, rgba(bilinear_reference(texels.astype(np.float64), uv.astype(np.float64))),
                               atol=2e-5)


def test_gradients_flow_through_sampling_coordinates(arch):
    tex = wk.Texture(wk.Format.r32f, (4,))
    tex.from_numpy(np.array([0, 1, 4, 9], np.float32))
    x = wk.field(wk.f32, shape=3, needs_grad=True)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)
    x.from_numpy(np.array([0.3, 0.5, 0.55], np.float32))

    @wk.kernel
    def total(t: wk.types.texture(num_dimensions=1)):
        for i in x:
            loss[None] += t.sample_lod(x[i], 0.0).x

    with wk.ad.Tape(loss=loss):
        total(tex)
    assert loss[None] == pytest.approx(0.7 + 2.5 + 3.1, rel=1e-5)
    np.testing.assert_allclose(x.grad.to_numpy(), [4.0, 12.0, 12.0], rtol=1e-5)    # slope * size per texel gap


# ---- fetch, load, store ----------------------------------------------------------------------------------------

def test_store_then_fetch_and_load_texel_by_texel(arch):
    tex = wk.Texture(wk.Format.rg32f, (6, 4))

    @wk.kernel
    def write(t: wk.types.rw_texture(num_dimensions=2, fmt=wk.Format.rg32f, lod=0)):
        for i, j in t:                                    # a struct-for over a texture visits its texels
            t.store(wk.Vector([i, j]), wk.Vector([i * 10.0 + j, -1.0 * j, 7.0, 8.0]))
        t.store(wk.Vector([6, 0]), wk.Vector([99.0, 99.0, 0.0, 0.0]))     # outside: dropped
        t.store(wk.Vector([-1, 2]), wk.Vector([99.0, 99.0, 0.0, 0.0]))

    @wk.kernel
    def read(t: wk.types.texture(num_dimensions=2), out: wk.types.ndarray(), edge: wk.types.ndarray()):
        for i, j in wk.ndrange(t.shape[0], t.shape[1]):
            out[i, j] = t.fetch(wk.Vector([i, j]), 0)
        edge[0] = t.fetch(wk.Vector([6, 1]), 0)          # outside: zeros in the stored channels
        edge[1] = t.fetch(wk.Vector([2, -1]), 0)

    @wk.kernel
    def load(t: wk.types.rw_texture(num_dimensions=2, fmt=wk.Format.rg32f),
             out: wk.types.ndarray(dtype=wk.math.vec4, ndim=2)):
        for i, j in t:
            out[i, j] = t.load(wk.Vector([i, j]))

    write(tex)
    i, j = np.meshgrid(np.arange(6), np.arange(4), indexing="ij")
    stored = np.stack([i * 10.0 + j, -1.0 * j], axis=-1)
    np.testing.assert_array_equal(tex.to_numpy(), stored)
    out = wk.ndarray(wk.math.vec4, (6, 4))
    edge = wk.ndarray(wk.math.vec4, (2,))
    read(tex, out, edge)
    np.testing.assert_array_equal(out.to_numpy(), rgba(stored))
    np.testing.assert_array_equal(edge.to_numpy(), [[0, 0, 0, 1], [0, 0, 0, 1]])
    loaded = np.zeros((6, 4, 4), np.float32)
    load(tex, loaded)
    np.testing.assert_array_equal(loaded, rgba(stored))


def test_textures_pass_through_funcs_and_one_compile_serves_every_size(arch):
    @wk.func
    def texel_sum(t: wk.template(), i: int, j: int) -> float:
        c = t.load(wk.Vector([i, j]))
        return c.r + c.g

    @wk.kernel
    def fill(t: wk.types.rw_texture(num_dimensions=2, fmt=wk.Format.rgba8), n: wk.i32):
        for i, j in t:
            t.store(wk.Vector([i, j]), wk.Vector([i / n, j / n, 0.0, 1.0]))

    @wk.kernel
    def total(t: wk.types.rw_texture(num_dimensions=2, fmt=wk.Format.rgba8)) -> wk.f32:
        s = 0.0
        for i, j in t:
            s += texel_sum(t, i, j)
        return s

    small, large = wk.Texture(wk.Format.rgba8, (4, 4)), wk.Texture(wk.Format.rgba8, (16, 8))
    fill(small, 4)
    compiles = wk.stats()["kernel_compiles"]
    fill(large, 16)
    assert wk.stats()["kernel_compiles"] == compiles          # the texel ndarray is an argument
    expected = quantise(Format.rgba8, np.array([[i / 16, j / 16] for i in range(16) for j in range(8)])).sum()
    assert total(large) == pytest.approx(expected, rel=1e-5)


# ---- host transfers --------------------------------------------------------------------------------------------

def test_from_field_from_ndarray_and_from_numpy_round_trip(arch):
    rng = np.random.default_rng(3)
    values = rng.random((5, 3, 3), dtype=np.float32)
    field = wk.Vector.field(3, wk.f32, shape=(5, 3))
    field.from_numpy(values)
    tex = wk.Texture(wk.Format.rgba32f, (5, 3))
    tex.from_field(field)                                       # three components into four channels
    np.testing.assert_array_equal(tex.to_numpy()[..., :3], values)
    assert (tex.to_numpy()[..., 3] == 0).all()

    narrow = wk.Texture(wk.Format.r32f, (5, 3))
    narrow.from_field(field)                                    # the first component only
    np.testing.assert_array_equal(narrow.to_numpy()[..., 0], values[..., 0])
    scalar = wk.field(wk.f32, shape=(5, 3))
    scalar.from_numpy(values[..., 1])
    narrow.from_field(scalar)
    np.testing.assert_array_equal(narrow.to_numpy()[..., 0], values[..., 1])

    array = wk.Vector.ndarray(2, wk.f32, (5, 3))
    array.from_numpy(values[..., :2])
    pair = wk.Texture(wk.Format.rg32f, (5, 3))
    pair.from_ndarray(array)
    np.testing.assert_array_equal(pair.to_numpy(), values[..., :2])
    pair.from_ndarray(values[..., 1:])                          # a numpy array works too
    np.testing.assert_array_equal(pair.to_numpy(), values[..., 1:])


def test_from_image_follows_taichis_orientation_and_to_image_inverts_it(arch):
    rng = np.random.default_rng(4)
    picture = rng.integers(0, 256, (3, 5, 3), dtype=np.uint8)   # 3 rows, 5 columns
    tex = wk.Texture(wk.Format.rgba8, (5, 3))
    tex.from_image(picture)
    texels = tex.to_numpy()
    for i in range(5):
        for j in range(3):                                      # Taichi's quarter turn counter-clockwise
            np.testing.assert_allclose(texels[i, j, :3], picture[j, 4 - i] / 255.0, rtol=1e-6)
    assert (texels[..., 3] == 0).all()
    pil = pytest.importorskip("PIL.Image")
    image = tex.to_image()
    assert image.mode == "RGB" and image.size == (5, 3)
    np.testing.assert_array_equal(np.asarray(image), picture)
    again = wk.Texture(wk.Format.rgba8, (5, 3))
    again.from_image(pil.fromarray(picture).convert("RGBA"))     # a PIL image, converted to RGB
    np.testing.assert_array_equal(again.to_numpy(), texels)


# ---- formats ---------------------------------------------------------------------------------------------------

def test_the_format_table_follows_taichis_names():
    assert (FORMATS[Format.rgba8].channels, FORMATS[Format.rgba8].dtype, FORMATS[Format.rgba8].encoding) \
        == (4, wk.u8, Encoding.UNORM)
    assert (FORMATS[Format.r32f].channels, FORMATS[Format.r32f].encoding) == (1, Encoding.FLOAT)
    assert (FORMATS[Format.rgb16i].channels, FORMATS[Format.rgb16i].dtype) == (3, wk.i16)
    assert FORMATS[Format.rg16f].encoding is Encoding.HALF and FORMATS[Format.r8u].encoding is Encoding.UINT
    assert wk.Texture(wk.f32, 1, (2, 2)).fmt is Format.r32f                 # Taichi's older spelling
    assert wk.Texture(dtype=wk.u8, num_channels=4, arr_shape=(2, 2)).fmt is Format.rgba8
    assert wk.types.rw_texture(num_dimensions=2, num_channels=1, channel_format=wk.f32).fmt is Format.r32f


@pytest.mark.parametrize("fmt", [Format.rgba8, Format.r16, Format.r8i, Format.r32u, Format.rg32i, Format.rg16f,
                                 Format.r32f])
def test_stores_keep_what_the_format_keeps_and_match_host_writes(arch, fmt):
    written = np.array([-1.5, -0.2, 0.0, 0.1234, 0.5, 1 / 255 * 0.49, 0.999, 1.7, 2.5, 300.7, 7e4, -200.9],
                       np.float32)
    info = FORMATS[fmt]
    tex = wk.Texture(fmt, (len(written),))

    @wk.kernel
    def store(t: wk.types.rw_texture(num_dimensions=1, fmt=fmt), values: wk.types.ndarray()):
        for i in t:
            v = values[i]
            t.store(i, wk.Vector([v, v + 1.0, v, v]))

    store(tex, written)
    device = tex.to_numpy()
    host = quantise(fmt, np.stack([written, written + 1] + [written] * (info.channels - 2), axis=-1)[
        :, :info.channels] if info.channels > 1 else written[:, None])
    np.testing.assert_allclose(device, host, rtol=1e-6, atol=1e-7)
    first = device[:, 0]
    if info.encoding is Encoding.UNORM:
        steps = first * (2 ** info.bits - 1)
        np.testing.assert_allclose(steps, np.round(steps), atol=1e-3)
        assert first.min() == 0.0 and first.max() == 1.0
    elif info.encoding is Encoding.SINT:
        assert first.tolist()[:4] == [-1.0, 0.0, 0.0, 0.0] and first.min() >= -2 ** (info.bits - 1)
    elif info.encoding is Encoding.UINT:
        assert first.min() == 0.0 and first[9] == 300.0
    elif info.encoding is Encoding.HALF:                   # the nearest f16, ties to even; past 65504 infinity
        assert first[3] == np.float32(np.float16(0.1234)) != np.float32(0.1234) and first[9] == 300.75
        assert first[10] == np.inf and first[11] == -201.0 + 0.125 == np.float32(np.float16(-200.9))
    else:
        np.testing.assert_array_equal(first, written)


def test_half_formats_round_to_the_nearest_f16_on_the_device(arch):
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.normal(0, 1, 64), rng.normal(0, 1e4, 32),
                             10.0 ** rng.uniform(-9, -3, 32) * rng.choice([-1, 1], 32),
                             [0.0, 65504, 65519.9, 65520, -7e4, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 2 ** -25,
                              1.5 * 2 ** -24, np.inf]]).astype(np.float32)
    tex = wk.Texture(wk.Format.r16f, (len(values),))

    @wk.kernel
    def store(t: wk.types.rw_texture(num_dimensions=1, fmt=wk.Format.r16f), values: wk.types.ndarray()):
        for i in t:
            t.store(i, wk.Vector([values[i], 0.0, 0.0, 0.0]))

    store(tex, values)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(tex.to_numpy()[:, 0], values.astype(np.float16).astype(np.float32))


# ---- Taichi's simple_texture example, headless ---------------------------------------------------------------

def test_ported_simple_texture_example_runs_headless(arch, tmp_path, monkeypatch):
    monkeypatch.setenv("WK_GUI_MAX_FRAMES", "3")
    monkeypatch.setenv("WK_GUI_SAVE", str(tmp_path / "uv.png"))
    ti = wk
    res = (64, 64)
    pixels = ti.Vector.field(3, dtype=float, shape=res)
    k = 32
    texture = ti.Texture(ti.f32, 1, (k, k))

    @ti.func
    def logo(p):           # a ring with a filled left half: a small stand-in for Taichi's logo pattern
        d = (p - 0.5).norm()
        inside = 0
        if d < 0.45:
            inside = 1 if (p[0] < 0.5 or d < 0.2) else 0
        return inside

    @ti.kernel
    def make_texture(tex: ti.types.rw_texture(num_dimensions=2, num_channels=1, channel_format=ti.f32, lod=0),
                     n: ti.i32):
        for i, j in ti.ndrange(n, n):
            ret = ti.cast(logo(ti.Vector([i, j]) / n), ti.f32)
            tex.store(ti.Vector([i, j]), ti.Vector([ret, 0.0, 0.0, 0.0]))

    @ti.kernel
    def paint(t: ti.f32, tex: ti.types.texture(num_dimensions=2), n: ti.i32):
        for i, j in pixels:
            uv = ti.Vector([i / res[0], j / res[1]])
            warp_uv = uv + ti.Vector([ti.cos(t + uv.x * 5.0), ti.sin(t + uv.y * 5.0)]) * 0.1
            c = ti.math.vec4(0.0)
            if uv.x > 0.5:
                c = tex.sample_lod(warp_uv, 0.0)
            else:
                c = tex.fetch(ti.cast(warp_uv * n, ti.i32), 0)
            pixels[i, j] = [c.r, c.r, c.r]

    window = ti.ui.Window("UV", res)
    canvas = window.get_canvas()
    t = 0.0
    frames = 0
    while window.running:
        make_texture(texture, k)
        paint(t, texture, k)
        canvas.set_image(pixels)
        window.show()
        t += 0.03
        frames += 1
    assert frames == 3 and (tmp_path / "uv.png").exists()
    image = pixels.to_numpy()
    assert 0.2 < image[..., 0].mean() < 0.8 and image.min() == 0.0 and image.max() == pytest.approx(1.0)
    # the right half is sampled: bilinear filtering leaves values between 0 and 1 at the pattern's edges
    right = image[res[0] // 2 + 1:, :, 0]
    assert ((right > 0.01) & (right < 0.99)).any()
    left = image[:res[0] // 2, :, 0]
    assert set(np.unique(left)) <= {0.0, 1.0}                      # fetched texels are exact


def test_a_canvas_shows_a_texture(arch):
    tex = wk.Texture(wk.Format.rgba8, (4, 2))
    texels = np.zeros((4, 2, 4), np.float32)
    texels[..., 0] = np.arange(4)[:, None] / 3.0
    texels[..., 1] = np.arange(2)[None, :]
    tex.from_numpy(texels)
    window = wk.ui.Window("texture", (4, 2), show_window=False)
    window.get_canvas().set_image(tex)                           # as Taichi's canvas takes a texture
    shown = window.get_image_buffer_as_numpy()
    np.testing.assert_allclose(shown[..., :3], np.concatenate([tex.to_numpy()[..., :2], np.zeros((4, 2, 1))], -1))


# ---- graphs ------------------------------------------------------------------------------------------------------

def test_graph_arguments_can_be_textures(arch):
    g = wk.graph

    @wk.kernel
    def make(t: wk.types.rw_texture(num_dimensions=2, fmt=wk.Format.r32f), v: wk.f32):
        for i, j in t:
            t.store(wk.Vector([i, j]), wk.Vector([v + i, 0.0, 0.0, 0.0]))

    @wk.kernel
    def read(t: wk.types.texture(num_dimensions=2), out: wk.types.ndarray(ndim=2)):
        for i, j in out:
            out[i, j] = t.fetch(wk.Vector([i, j]), 0).x

    builder = g.GraphBuilder()
    builder.dispatch(make, g.Arg(g.ArgKind.RWTEXTURE, "tex", ndim=2, fmt=wk.Format.r32f), g.Arg(g.ArgKind.SCALAR, "v"))
    builder.dispatch(read, g.Arg(g.ArgKind.TEXTURE, "tex", ndim=2, fmt=wk.Format.r32f),
                     g.Arg(g.ArgKind.NDARRAY, "out", wk.f32, ndim=2))
    with pytest.raises(wk.WkError, match="declared twice"):
        builder.compile()
    builder = g.GraphBuilder()
    tex_arg = g.Arg(g.ArgKind.TEXTURE, "tex", ndim=2, fmt=wk.Format.r32f)
    builder.dispatch(make, tex_arg, g.Arg(g.ArgKind.SCALAR, "v"))
    builder.dispatch(read, tex_arg, g.Arg(g.ArgKind.NDARRAY, "out", wk.f32, ndim=2))
    graph = builder.compile()
    tex = wk.Texture(wk.Format.r32f, (3, 2))
    out = wk.ndarray(wk.f32, (3, 2))
    graph.run({"tex": tex, "v": 5.0, "out": out})
    np.testing.assert_array_equal(out.to_numpy(), [[5, 5], [6, 6], [7, 7]])
    with pytest.raises(wk.ArgumentError, match="'tex' is a 2-D texture"):
        graph.run({"tex": wk.Texture(wk.Format.r32f, (3, 2, 2)), "v": 1.0, "out": out})
    with pytest.raises(wk.ArgumentError, match="'tex' has format r32f"):
        graph.run({"tex": wk.Texture(wk.Format.rgba8, (3, 2)), "v": 1.0, "out": out})


def test_ported_texture_graph_example_runs_headless(arch, monkeypatch):
    """Taichi's examples/graph/texture_graph.py, made small: graph arguments in the older spelling (shape,
    channel_format, num_channels)."""
    monkeypatch.setenv("WK_GUI_MAX_FRAMES", "2")
    ti = wk
    res = (32, 32)
    img = ti.Vector.field(4, dtype=float, shape=res)
    pixels_arr = ti.Vector.ndarray(4, dtype=float, shape=res)
    texture = ti.Texture(ti.Format.r32f, (16, 16))

    @ti.kernel
    def make_texture(tex: ti.types.rw_texture(num_dimensions=2, num_channels=1, channel_format=ti.f32, lod=0)):
        for i, j in ti.ndrange(16, 16):
            ret = ti.cast((i // 4 + j // 4) % 2, ti.f32)            # a checkerboard
            tex.store(ti.Vector([i, j]), ti.Vector([ret, 0.0, 0.0, 0.0]))

    @ti.kernel
    def paint(t: ti.f32, pixels: ti.types.ndarray(ndim=2), tex: ti.types.texture(num_dimensions=2)):
        for i, j in pixels:
            uv = ti.Vector([i / res[0], j / res[1]])
            warp_uv = uv + ti.Vector([ti.cos(t + uv.x * 5.0), ti.sin(t + uv.y * 5.0)]) * 0.1
            c = ti.math.vec4(0.0)
            if uv.x > 0.5:
                c = tex.sample_lod(warp_uv, 0.0)
            else:
                c = tex.fetch(ti.cast(warp_uv * 16, ti.i32), 0)
            pixels[i, j] = [c.r, c.r, c.r, 1.0]

    @ti.kernel
    def copy_to_field(pixels: ti.types.ndarray(ndim=2)):
        for I in ti.grouped(pixels):
            img[I] = pixels[I]

    _t = ti.graph.Arg(ti.graph.ArgKind.SCALAR, "t", ti.f32)
    _pixels_arr = ti.graph.Arg(ti.graph.ArgKind.NDARRAY, "pixels_arr", ti.f32, field_dim=2, element_shape=(4,))
    _rw_tex = ti.graph.Arg(ti.graph.ArgKind.RWTEXTURE, "rw_tex", channel_format=ti.f32, shape=(16, 16),
                           num_channels=1)
    g_init_builder = ti.graph.GraphBuilder()
    g_init_builder.dispatch(make_texture, _rw_tex)
    g_init_builder.compile().run({"rw_tex": texture})
    _tex = ti.graph.Arg(ti.graph.ArgKind.TEXTURE, "tex", channel_format=ti.f32, shape=(16, 16), num_channels=1)
    g_builder = ti.graph.GraphBuilder()
    g_builder.dispatch(paint, _t, _pixels_arr, _tex)
    g = g_builder.compile()
    t = 0.0
    window = ti.ui.Window("UV", res)
    canvas = window.get_canvas()
    while window.running:
        g.run({"t": t, "pixels_arr": pixels_arr, "tex": texture})
        copy_to_field(pixels_arr)
        canvas.set_image(img)
        window.show()
        t += 0.03
    checker = (np.arange(16)[:, None] // 4 + np.arange(16)[None, :] // 4) % 2
    np.testing.assert_array_equal(texture.to_numpy()[..., 0], checker)
    image = img.to_numpy()
    assert (image[..., 3] == 1.0).all() and 0.2 < image[..., 0].mean() < 0.8
    with pytest.raises(wk.ArgumentError, match="'tex' has 1 channel"):
        g.run({"t": t, "pixels_arr": pixels_arr, "tex": ti.Texture(ti.Format.rg32f, (16, 16))})


# ---- misuse --------------------------------------------------------------------------------------------------------

def test_misuse_is_reported_with_a_clear_message(arch):
    tex = wk.Texture(wk.Format.r32f, (4, 4))

    @wk.kernel
    def store_read_only(t: wk.types.texture(num_dimensions=2)):
        t.store(wk.Vector([0, 0]), wk.Vector([1.0, 0.0, 0.0, 0.0]))

    with pytest.raises(wk.CompileError, match="texture 't' is read-only .* it has no store\\(\\); annotate it "
                                              "wk.types.rw_texture"):
        store_read_only(tex)

    @wk.kernel
    def sample_storage(t: wk.types.rw_texture(num_dimensions=2, fmt=wk.Format.r32f)) -> wk.f32:
        return t.sample_lod(wk.Vector([0.5, 0.5]), 0.0).x

    with pytest.raises(wk.CompileError, match="'t' is a storage texture .* no sample_lod\\(\\)"):
        sample_storage(tex)

    @wk.kernel
    def wrong_uv(t: wk.types.texture(num_dimensions=2)) -> wk.f32:
        return t.sample_lod(wk.Vector([0.5, 0.5, 0.5]), 0.0).x

    with pytest.raises(wk.CompileError, match="texture 't' has 2 dimension\\(s\\): sample_lod\\(\\) takes uv of 2 "
                                              "component\\(s\\), got a 3 vector"):
        wrong_uv(tex)

    @wk.kernel
    def float_index(t: wk.types.texture(num_dimensions=2)) -> wk.f32:
        return t.fetch(wk.Vector([0.5, 1.5]), 0).x

    with pytest.raises(wk.CompileError, match="takes integer texel indices.*wk.cast"):
        float_index(tex)

    @wk.kernel
    def narrow_value(t: wk.types.rw_texture(num_dimensions=2, fmt=wk.Format.rgba32f)):
        t.store(wk.Vector([0, 0]), wk.Vector([1.0, 2.0]))

    with pytest.raises(wk.CompileError, match="at least 4 component\\(s\\)"):
        narrow_value(wk.Texture(wk.Format.rgba32f, (2, 2)))

    @wk.kernel
    def three_indices(t: wk.types.rw_texture(num_dimensions=2, fmt=wk.Format.r32f)):
        for i, j, k in t:
            t.store(wk.Vector([i, j]), wk.Vector([1.0, 0.0, 0.0, 0.0]))

    with pytest.raises(wk.CompileError, match="this loop has 2 index\\(es\\) but 3 loop variable"):
        three_indices(tex)

    @wk.kernel
    def by_closure() -> wk.f32:
        return tex.fetch(wk.Vector([0, 0]), 0).x

    with pytest.raises(wk.CompileError, match="compile-time value \\(by closure or a wk.template\\(\\) parameter\\); "
                                              "textures are kernel arguments: pass it to a parameter annotated "
                                              "wk.types.texture\\(num_dimensions=2\\)"):
        by_closure()

    @wk.kernel
    def captured_shape() -> wk.i32:
        return tex.shape[0] * 10 + tex.num_channels            # compile-time facts of a captured texture

    assert captured_shape() == 41

    @wk.kernel
    def as_template(t: wk.template()):
        for i, j in t:
            pass

    with pytest.raises(wk.CompileError, match="compile-time value"):
        as_template(tex)


def test_wrong_texture_arguments_are_argument_errors(arch):
    @wk.kernel
    def flat(t: wk.types.texture(num_dimensions=2)):
        pass

    @wk.kernel
    def rw(t: wk.types.rw_texture(num_dimensions=2, fmt=wk.Format.rgba8)):
        pass

    with pytest.raises(wk.ArgumentError, match="annotated with num_dimensions=2, got a 3-D texture"):
        flat(wk.Texture(wk.Format.r32f, (2, 2, 2)))
    with pytest.raises(wk.ArgumentError, match="annotated with fmt=wk.Format.rgba8, got a texture of format "
                                               "wk.Format.r32f"):
        rw(wk.Texture(wk.Format.r32f, (2, 2)))
    with pytest.raises(wk.ArgumentError, match="expects a wk.Texture, got Ndarray"):
        flat(wk.ndarray(wk.f32, (2, 2)))
    with pytest.raises(wk.WkError, match="1, 2 or 3 dimensions"):
        wk.Texture(wk.Format.r32f, (2, 2, 2, 2))
    with pytest.raises(wk.WkError, match="1, 2 or 3 dimensions"):
        wk.types.texture(num_dimensions=4)
    with pytest.raises(wk.WkError, match="needs a 2-D texture"):
        wk.Texture(wk.Format.rgba8, (4,)).from_image(np.zeros((1, 4, 3), np.uint8))
    with pytest.raises(wk.WkError, match="shape \\(3, 2\\), the field"):
        wk.Texture(wk.Format.r32f, (3, 2)).from_field(wk.field(wk.f32, shape=(2, 3)))


def test_an_unannotated_texture_parameter_allows_every_method(arch):
    tex = wk.Texture(wk.Format.rg32f, (2, 2))

    @wk.kernel
    def use(t) -> wk.f32:
        t.store(wk.Vector([1, 1]), wk.Vector([3.0, 4.0, 0.0, 0.0]))
        return t.load(wk.Vector([1, 1])).y + t.fetch(wk.Vector([1, 1]), 0).x

    assert use(tex) == 7.0
