"""wk.tools (wgkern/tools/): Taichi's ti.tools images, videos, PLY and VTK writers. PLY bytes are checked against
files Taichi 1.7.4's writer produced for the same mesh (stored below, so Taichi is not needed); image values
against stb_image's rules, as Taichi reads and writes with it."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

import wgkern as wk
from wgkern.png import read_png, write_png
from wgkern.tools.video import FFmpegNotFoundError


# ---- images ----------------------------------------------------------------------------------------------------
def test_imwrite_imread_round_trip_every_channel_count(tmp_path):
    rng = np.random.default_rng(0)
    for shape in [(7, 5), (7, 5, 1), (7, 5, 2), (7, 5, 3), (7, 5, 4)]:
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        path = str(tmp_path / "a.png")
        wk.tools.imwrite(img, path)
        back = wk.tools.imread(path)
        assert back.dtype == np.uint8 and back.shape == (7, 5, shape[2] if len(shape) == 3 else 1)
        assert (back.reshape(img.shape) == img).all()


def test_image_orientation_is_x_right_y_up(tmp_path):
    img = np.zeros((4, 3, 3), np.uint8)
    img[0, 0] = (255, 0, 0)        # bottom left
    img[3, 2] = (0, 255, 0)        # top right
    wk.tools.imwrite(img, str(tmp_path / "o.png"))
    rows = read_png(str(tmp_path / "o.png"))       # rows from the top
    assert rows.shape == (3, 4, 3)
    assert rows[2, 0].tolist() == [255, 0, 0] and rows[0, 3].tolist() == [0, 255, 0]
    assert (wk.tools.imread(str(tmp_path / "o.png")) == img).all()


def test_imwrite_scales_floats_and_wide_unsigned_ints_as_taichi(tmp_path):
    floats = np.array([[[-0.5, 0.0, 0.2], [0.5, 0.999, 1.5]]], np.float32)
    wk.tools.imwrite(floats, str(tmp_path / "f.png"))
    assert wk.tools.imread(str(tmp_path / "f.png")).tolist() == [[[0, 0, 51], [127, 254, 255]]]   # truncated
    grey = np.array([[0.0, 0.25], [1.0, np.nan]])
    wk.tools.imwrite(grey, str(tmp_path / "g.png"))
    assert wk.tools.imread(str(tmp_path / "g.png"))[..., 0].tolist() == [[0, 63], [255, 0]]
    wide = np.array([[[0, 257, 65535]]], np.uint16)
    wk.tools.imwrite(wide, str(tmp_path / "w.png"))
    assert wk.tools.imread(str(tmp_path / "w.png")).tolist() == [[[0, 1, 255]]]
    wk.imwrite(wide, str(tmp_path / "old_name.png"))                   # Taichi's older ti.imwrite
    assert (tmp_path / "old_name.png").read_bytes() == (tmp_path / "w.png").read_bytes()


def test_imwrite_takes_fields(arch, tmp_path):
    colour = wk.Vector.field(3, wk.f32, shape=(6, 4))
    grey = wk.field(wk.u8, shape=(6, 4))

    @wk.kernel
    def paint():
        for i, j in grey:
            colour[i, j] = wk.Vector([i / 5.0, j / 3.0, 1.0])
            grey[i, j] = wk.u8(i * 40 + j)

    paint()
    wk.tools.imwrite(colour, str(tmp_path / "c.png"))
    wk.tools.imwrite(grey, str(tmp_path / "g.png"))
    expected = (np.clip(colour.to_numpy(), 0, 1) * 255.0).astype(np.uint8)
    assert (wk.tools.imread(str(tmp_path / "c.png")) == expected).all()
    assert (wk.tools.imread(str(tmp_path / "g.png"))[..., 0] == grey.to_numpy()).all()
    assert wk.tools.imresize(grey, 3, 2).tolist() == grey.to_numpy()[[0, 2, 4]][:, [0, 2]].tolist()


def test_imread_channels_convert_as_stb_image(tmp_path):
    rgba = np.array([[[200, 100, 50, 7], [0, 255, 10, 255]]], np.uint8)
    path = str(tmp_path / "c.png")
    wk.tools.imwrite(rgba, path)
    grey = [(200 * 77 + 100 * 150 + 50 * 29) >> 8, (255 * 150 + 10 * 29) >> 8]
    assert wk.tools.imread(path, 1)[0, :, 0].tolist() == grey
    assert wk.tools.imread(path, 2)[0].tolist() == [[grey[0], 7], [grey[1], 255]]
    assert wk.tools.imread(path, 3)[0].tolist() == [[200, 100, 50], [0, 255, 10]]
    wk.tools.imwrite(np.array([[9, 8]], np.uint8), path)
    assert wk.tools.imread(path, 4)[0].tolist() == [[9, 9, 9, 255], [8, 8, 8, 255]]
    assert wk.tools.imread(path, 3).shape == (1, 2, 3)


def _png(width, height, depth, colour_type, rows, interlace=0, extra=()):
    """A PNG of the given raw scanlines (each starting with its filter byte)."""
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", width, height, depth, colour_type, 0, 0, interlace)
    body = b"".join(chunk(tag, data) for tag, data in extra)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + body + chunk(b"IDAT", zlib.compress(b"".join(rows)))
            + chunk(b"IEND", b""))


def _filtered(filter_type, line, previous, stride):
    """PNG's forward filter on one row (the reference reader undoes it)."""
    out = bytearray()
    for i, value in enumerate(line):
        left = line[i - stride] if i >= stride else 0
        up = previous[i]
        upper_left = previous[i - stride] if i >= stride else 0
        estimate = left + up - upper_left
        paeth = min((abs(estimate - left), 0, left), (abs(estimate - up), 1, up),
                    (abs(estimate - upper_left), 2, upper_left))[2]
        predicted = [0, left, up, (left + up) // 2, paeth][filter_type]
        out.append((value - predicted) & 0xFF)
    return bytes([filter_type]) + bytes(out)


def test_read_png_undoes_every_filter(tmp_path):
    pixels = np.random.default_rng(1).integers(0, 256, (5, 4, 3), dtype=np.uint8)
    rows, previous = [], bytes(12)
    for row in range(5):
        line = pixels[row].tobytes()
        rows.append(_filtered(row, line, previous, 3))
        previous = line
    (tmp_path / "f.png").write_bytes(_png(4, 5, 8, 2, rows))
    assert (read_png(str(tmp_path / "f.png")) == pixels).all()


def test_read_png_palettes_bit_depths_transparency_and_interlacing(tmp_path):
    path = tmp_path / "p.png"
    palette = (b"PLTE", bytes([255, 0, 0, 0, 255, 0, 0, 0, 255]))
    path.write_bytes(_png(3, 1, 2, 3, [b"\x00" + bytes([0b00011000])], extra=[palette, (b"tRNS", b"\x80")]))
    assert read_png(str(path)).tolist() == [[[255, 0, 0, 128], [0, 255, 0, 255], [0, 0, 255, 255]]]
    path.write_bytes(_png(4, 1, 1, 0, [b"\x00" + bytes([0b10100000])]))
    assert read_png(str(path))[..., 0].tolist() == [[255, 0, 255, 0]]
    path.write_bytes(_png(2, 1, 16, 2, [b"\x00" + struct.pack(">6H", 65535, 256, 255, 1, 2, 3)],
                          extra=[(b"tRNS", struct.pack(">3H", 1, 2, 3))]))
    assert read_png(str(path)).tolist() == [[[255, 1, 0, 255], [0, 0, 0, 0]]]
    # Adam7: pass k of a 3 x 3 grey image holds the pixels it owns, each pass its own filtered sub-image
    image = np.arange(9, dtype=np.uint8).reshape(3, 3) * 20
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
    rows = [b"\x00" + image[y0::dy, x0::dx][y].tobytes()
            for x0, y0, dx, dy in passes if image[y0::dy, x0::dx].size for y in range(image[y0::dy, x0::dx].shape[0])]
    path.write_bytes(_png(3, 3, 8, 0, rows, interlace=1))
    assert (read_png(str(path))[..., 0] == image).all()
    path.write_bytes(b"GIF89a")
    with pytest.raises(ValueError, match="PNG|image"):
        read_png(str(path))


def test_write_png_channel_counts_read_back(tmp_path):
    for channels in (1, 2, 3, 4):
        pixels = np.arange(24 * channels, dtype=np.uint8).reshape(4, 6, channels)
        write_png(str(tmp_path / "w.png"), pixels)
        assert (read_png(str(tmp_path / "w.png")) == pixels).all()


def test_other_formats_need_pillow(tmp_path, monkeypatch):
    img = np.random.default_rng(2).integers(0, 256, (6, 4, 3), dtype=np.uint8)
    monkeypatch.setitem(sys.modules, "PIL", None)         # as if Pillow were not installed
    monkeypatch.setitem(sys.modules, "PIL.Image", None)
    with pytest.raises(RuntimeError, match=r"\.jpg.*Pillow \(pip install pillow\)"):
        wk.tools.imwrite(img, str(tmp_path / "a.jpg"))
    (tmp_path / "b.bmp").write_bytes(b"BM" + bytes(60))
    with pytest.raises(RuntimeError, match=r"\.bmp.*Pillow"):
        wk.tools.imread(str(tmp_path / "b.bmp"))


def test_bmp_round_trip_with_pillow(tmp_path):
    pytest.importorskip("PIL.Image")
    img = np.random.default_rng(3).integers(0, 256, (6, 4, 3), dtype=np.uint8)
    wk.tools.imwrite(img, str(tmp_path / "a.bmp"))
    assert (wk.tools.imread(str(tmp_path / "a.bmp")) == img).all()
    wk.tools.imwrite(img, str(tmp_path / "a.jpg"))
    assert wk.tools.imread(str(tmp_path / "a.jpg")).shape == (6, 4, 3)


def test_image_errors_name_the_argument(tmp_path):
    with pytest.raises(ValueError, match="img has dtype int32"):
        wk.tools.imwrite(np.zeros((4, 4), np.int32), str(tmp_path / "a.png"))
    with pytest.raises(ValueError, match=r"img of shape \(4, 4, 5\)"):
        wk.tools.imwrite(np.zeros((4, 4, 5), np.uint8), str(tmp_path / "a.png"))
    with pytest.raises(ValueError, match="channels must be"):
        wk.tools.imread(str(tmp_path / "a.png"), channels=5)
    with pytest.raises(ValueError, match="w must be an int of at least 2"):
        wk.tools.imresize(np.zeros((4, 4)), 1)
    with pytest.raises(ValueError, match="h must be an int"):
        wk.tools.imresize(np.zeros((4, 4)), 3, 2.5)


def test_imresize_picks_the_nearest_lower_pixel():
    img = np.arange(4 * 6).reshape(4, 6)
    assert wk.tools.imresize(img, 4, 6) is img
    assert wk.tools.imresize(img, 2, 3).tolist() == [[0, 2, 4], [12, 14, 16]]
    assert wk.tools.imresize(img, 8).tolist()[7] == [18, 18, 19, 20, 21, 21, 22, 23]
    assert wk.tools.imresize(np.zeros((5, 3, 4)), 2, 7).shape == (2, 7, 4)


def test_imshow_draws_off_screen_and_returns(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WK_GUI_SAVE", str(tmp_path / "shown.png"))
    img = np.random.default_rng(4).integers(0, 256, (8, 6, 3), dtype=np.uint8)
    assert wk.tools.imshow(img, "Random") is None
    assert "wk.tools.imshow 'Random'" in capsys.readouterr().err
    assert (wk.tools.imread(str(tmp_path / "shown.png"), 3) == img).all()
    wk.tools.imshow(np.full((8, 6), 0.5))                             # grey floats too


# ---- VideoManager ----------------------------------------------------------------------------------------------
def _frames(count, width=8, height=6):
    return [np.full((width, height, 3), 10 * k, np.uint8) for k in range(count)]


def test_video_manager_writes_numbered_frames(tmp_path, capsys):
    video = wk.tools.VideoManager(str(tmp_path / "out"), automatic_build=False)
    video.write_frames(_frames(3, 9, 7))
    frames = sorted(os.listdir(video.get_frame_directory()))
    assert frames == ["000000.png", "000001.png", "000002.png"]
    assert (video.width, video.height) == (8, 6)                      # odd sizes lose a column and a row
    assert "odd" in capsys.readouterr().err
    assert (wk.tools.imread(str(tmp_path / "out" / "frames" / "000002.png")) == 20).all()
    assert video.get_output_filename(".mp4") == str(tmp_path / "out" / "video.mp4")
    named = wk.tools.VideoManager(str(tmp_path / "out"), video_filename="clip.avi")
    assert named.get_output_filename(".gif") == str(tmp_path / "out" / "clip.gif")
    with pytest.raises(ValueError, match="width and height"):
        wk.tools.VideoManager(str(tmp_path), width=4)


def test_video_manager_without_ffmpeg_says_where_the_frames_are(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    video = wk.tools.VideoManager(str(tmp_path / "out"), framerate=10, automatic_build=False)
    video.write_frames(_frames(2))
    frame_dir = os.path.join(str(tmp_path / "out"), "frames")
    with pytest.raises(FFmpegNotFoundError, match=r"\.mp4 needs ffmpeg on PATH.*2 frames are PNG files in "
                       + frame_dir.replace("\\", "\\\\")):
        video.make_video(mp4=True, gif=False)
    import PIL.Image                                                  # the test extra installs Pillow
    video.make_video(mp4=False, gif=True)                             # a GIF needs only Pillow
    with PIL.Image.open(video.get_output_filename(".gif")) as gif:
        assert gif.n_frames == 2 and gif.size == (8, 6)
    automatic = wk.tools.VideoManager(str(tmp_path / "auto"))
    automatic.write_frames(_frames(8))                                # builds at 4 and 8 frames: warns once
    assert capsys.readouterr().err.count("needs ffmpeg") == 1


def test_video_manager_runs_ffmpeg_from_path(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "ffmpeg.log"
    fake = bin_dir / "ffmpeg"
    fake.write_text(f"#!{sys.executable}\nimport sys\nopen({str(log)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
                    "open(sys.argv[-1], 'w').close()\n")                  # logs its arguments, makes the output
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    video = wk.tools.VideoManager(str(tmp_path / "out"), framerate=12, automatic_build=False)
    video.write_frames(_frames(2))
    video.make_video(mp4=False, gif=True)
    calls = log.read_text().splitlines()
    assert len(calls) == 3 and "-framerate 12" in calls[0] and "-s:v 8x6" in calls[0]
    assert calls[0].endswith("video.mp4") and calls[2].endswith("video.gif")
    assert not os.path.exists(video.get_output_filename(".mp4")) and os.path.exists(video.get_output_filename(".gif"))


# ---- PLY -------------------------------------------------------------------------------------------------------
# What Taichi 1.7.4's ti.tools.PLYWriter writes for _small_mesh (binary: little-endian machines)
TAICHI_HEADER = (
    "ply\nformat {} 1.0\ncomment small mesh\nelement vertex 4\nproperty float x\nproperty float y\n"
    "property float z\nproperty float red\nproperty float green\nproperty float blue\nproperty float Alpha\n"
    "property double t\nproperty uchar uv_1\nproperty uchar uv_2\nproperty int id\nelement face 2\n"
    "property list uchar int vertex_indices\nproperty int id\nproperty float area\nend_header\n")
TAICHI_BINARY_BODY = bytes.fromhex(
    "00000000000000000000003f0000803f0000000000000000abaaaa3e00000000000000000001000000000000803f000000000000003f"
    "000000000000803f00000000abaaaa3e922449922449c23f020301000000000000000000803f0000003f00000000000000000000803f"
    "abaaaa3e922449922449d23f0405020000000000803f0000803f0000003f0000003f0000003f0000003fabaaaa3edbb66ddbb66ddb3f"
    "06070300000003000000000100000002000000000000000000003f03010000000300000002000000010000000000803e")
TAICHI_ASCII_BODY = (
    "0.0 0.0 0.5 1.0 0.0 0.0 0.33333334 0.0 0 1 0 \n"
    "1.0 0.0 0.5 0.0 1.0 0.0 0.33333334 0.14285714285714285 2 3 1 \n"
    "0.0 1.0 0.5 0.0 0.0 1.0 0.33333334 0.2857142857142857 4 5 2 \n"
    "1.0 1.0 0.5 0.5 0.5 0.5 0.33333334 0.42857142857142855 6 7 3 \n"
    "3 0 1 2 0 0.5 \n3 1 3 2 1 0.25 \n")


def _small_mesh(tools):
    writer = tools.PLYWriter(num_vertices=4, num_faces=2, comment="small mesh")
    writer.add_vertex_pos(np.array([0, 1, 0, 1.0]), np.array([0, 0, 1, 1.0]), np.full(4, 0.5))
    writer.add_vertex_rgba(np.array([1, 0, 0, 0.5]), np.array([0, 1, 0, 0.5]), np.array([0, 0, 1, 0.5]),
                           np.full(4, 1 / 3))
    writer.add_vertex_channel("t", "double", np.arange(4) / 7)
    writer.add_vertex_channel("uv", "uchar", np.arange(8).reshape(4, 2))
    writer.add_vertex_id()
    writer.add_faces(np.array([[0, 1, 2], [1, 3, 2]]))
    writer.add_face_id()
    writer.add_face_channel("area", "float", np.array([0.5, 0.25]))
    return writer


def test_ply_files_are_taichis_bytes(tmp_path):
    writer = _small_mesh(wk.tools)
    writer.export_ascii(str(tmp_path / "mesh_ascii.ply"))
    assert (tmp_path / "mesh_ascii.ply").read_text() == TAICHI_HEADER.format("ascii") + TAICHI_ASCII_BODY
    writer.export(str(tmp_path / "mesh.ply"))
    if sys.byteorder == "little":
        expected = TAICHI_HEADER.format("binary_little_endian").encode() + TAICHI_BINARY_BODY
        assert (tmp_path / "mesh.ply").read_bytes() == expected
    writer.export_frame(7, str(tmp_path / "series.ply"))
    writer.export_frame_ascii(12, str(tmp_path / "series"))
    assert (tmp_path / "series_000007.ply").read_bytes() == (tmp_path / "mesh.ply").read_bytes()
    assert (tmp_path / "series_000012.ply").read_bytes() == (tmp_path / "mesh_ascii.ply").read_bytes()


def test_ply_matches_taichi_when_installed(tmp_path):
    taichi = pytest.importorskip("taichi")
    for tools, name in [(wk.tools, "wk"), (taichi.tools, "ti")]:
        writer = tools.PLYWriter(num_vertices=3, num_faces=1, face_type="quad")
        writer.add_vertex_pos(np.arange(3) / 3, np.ones(3), np.zeros(3))
        writer.add_vertex_normal(np.ones(3), np.zeros(3), np.zeros(3))
        writer.add_vertex_alpha(np.full(3, 0.1))
        writer.add_vertex_channel("s", "short", -np.arange(3))
        writer.add_vertex_piece(np.ones(3))
        writer.add_faces(np.array([0, 1, 2, 0]))
        writer.add_face_piece(np.ones(1))
        writer.export(str(tmp_path / f"{name}.ply"))
        writer.export_ascii(str(tmp_path / f"{name}_ascii.ply"))
    for suffix in ("", "_ascii"):
        assert (tmp_path / f"wk{suffix}.ply").read_bytes() == (tmp_path / f"ti{suffix}.ply").read_bytes()


def test_ply_vertex_only_file_has_no_face_element(tmp_path):
    writer = wk.tools.PLYWriter(2)
    writer.add_vertex_pos(np.zeros(2), np.ones(2), np.arange(2))
    writer.export_ascii(str(tmp_path / "p.ply"))
    text = (tmp_path / "p.ply").read_text()
    assert "face" not in text and text.endswith("end_header\n0.0 1.0 0.0 \n0.0 1.0 1.0 \n")


def test_ply_errors_name_what_is_wrong(tmp_path, capsys):
    with pytest.raises(ValueError, match="num_vertices"):
        wk.tools.PLYWriter(0)
    with pytest.raises(ValueError, match="face_type"):
        wk.tools.PLYWriter(3, 1, face_type="hex")
    writer = wk.tools.PLYWriter(3, 1)
    with pytest.raises(ValueError, match=r"add_vertex_pos"):
        writer.export(str(tmp_path / "a.ply"))
    writer.add_vertex_pos(np.zeros(3), np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match=r"face indices .*add_faces"):
        writer.export(str(tmp_path / "a.ply"))
    with pytest.raises(ValueError, match="indices has 4 values"):
        writer.add_faces(np.arange(4))
    with pytest.raises(ValueError, match=r"vertex channel 'w' has data of shape \(4,\)"):
        writer.add_vertex_channel("w", "float", np.zeros(4))
    writer.add_face_channel("k", "quaternion", np.zeros(1))          # Taichi skips unknown types, with a word
    assert "unknown PLY type 'quaternion'" in capsys.readouterr().err


# ---- VTK and the package ---------------------------------------------------------------------------------------
def test_write_vtk_without_pyevtk_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyevtk", None)
    monkeypatch.setitem(sys.modules, "pyevtk.hl", None)
    with pytest.raises(RuntimeError, match=r"pip install pyevtk"):
        wk.tools.write_vtk(np.zeros((3, 3)), str(tmp_path / "grid"))


def test_tools_load_on_first_use():
    code = ("import sys, wgkern as wk; assert 'wgkern.tools' not in sys.modules; "
            "from wgkern.tools import imwrite, PLYWriter, VideoManager; "
            "assert wk.tools.imwrite is imwrite and wk.tools.image.imread is wk.tools.imread; "
            "assert wk.tools.np2ply.PLYWriter is PLYWriter and wk.tools.video.VideoManager is VideoManager")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=os.path.dirname(os.path.dirname(__file__)))
