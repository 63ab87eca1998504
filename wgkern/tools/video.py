"""Taichi's ti.tools.VideoManager: frames written as numbered PNGs under <output_dir>/frames, then made into an
.mp4 and a .gif by `ffmpeg` when it is on PATH (the same ffmpeg commands as Taichi). Without ffmpeg the GIF is
written with Pillow when it is installed, and asking for an .mp4 raises FFmpegNotFoundError, which says where
the frames are."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any, Iterable

import numpy as np

from wgkern.png import read_png
from wgkern.tools.image import imwrite

FRAME_FN_TEMPLATE = "%06d.png"
FRAME_DIR = "frames"


class FFmpegNotFoundError(RuntimeError):
    """make_video was asked for a video that needs ffmpeg, and there is no ffmpeg on PATH."""


class VideoManager:
    """Collects frames (img[x, y] arrays or fields, as imwrite takes them) and makes videos of them.
    With `automatic_build` the video is rebuilt after 4, 8, 16, ... frames, as Taichi does; `post_processor` is
    any object with a `process(img) -> img` method, applied to each frame before it is written."""

    def __init__(self, output_dir: str, video_filename: str | None = None, width: int | None = None,
                 height: int | None = None, post_processor: Any = None, framerate: int = 24,
                 automatic_build: bool = True):
        if (width is None) != (height is None):
            raise ValueError(f"VideoManager: give both width and height or neither (width={width!r}, "
                             f"height={height!r})")
        self.width = width
        self.height = height
        self.directory = os.fspath(output_dir)
        self.frame_directory = os.path.join(self.directory, FRAME_DIR)
        os.makedirs(self.frame_directory, exist_ok=True)
        self.video_filename = video_filename
        self.next_video_checkpoint = 4
        self.framerate = framerate
        self.post_processor = post_processor
        self.frame_counter = 0
        self.frame_fns: list[str] = []
        self.automatic_build = automatic_build
        self._warned_no_ffmpeg = False

    def get_output_filename(self, suffix: str) -> str:
        """<output_dir>/<video_filename without its extension><suffix> (video<suffix> when no name was given)."""
        if not self.video_filename:
            return os.path.join(self.directory, "video" + suffix)
        filename, extension = os.path.splitext(self.video_filename)
        if extension:
            print(f"VideoManager: the extension {extension} of video_filename is replaced by {suffix}",
                  file=sys.stderr)
        return os.path.join(self.directory, filename + suffix)

    def get_frame_directory(self) -> str:
        return self.frame_directory

    def write_frame(self, img: Any) -> None:
        """Writes the next frame; an odd width or height loses its last column or row (video encoders need
        even sizes), as in Taichi."""
        img = np.asarray(img.to_numpy() if hasattr(img, "to_numpy") else img)
        if img.ndim < 2:
            raise ValueError(f"VideoManager.write_frame: img of shape {img.shape}; a frame is img[x, y, ...]")
        if img.shape[0] % 2 != 0:
            print("VideoManager: the frame's width is odd; dropping its last column", file=sys.stderr)
            img = img[:-1]
        if img.shape[1] % 2 != 0:
            print("VideoManager: the frame's height is odd; dropping its last row", file=sys.stderr)
            img = img[:, :-1]
        if self.post_processor:
            img = self.post_processor.process(img)
        if self.width is None:
            self.width = img.shape[0]
            self.height = img.shape[1]
        fn = FRAME_FN_TEMPLATE % self.frame_counter
        self.frame_fns.append(fn)
        imwrite(img, os.path.join(self.frame_directory, fn))
        self.frame_counter += 1
        if self.automatic_build and self.frame_counter % self.next_video_checkpoint == 0:
            self.next_video_checkpoint *= 2
            try:
                self.make_video()
            except FFmpegNotFoundError as exc:      # a program that only asked for frames goes on
                if not self._warned_no_ffmpeg:
                    print(f"VideoManager (automatic_build): {exc}", file=sys.stderr)
                    self._warned_no_ffmpeg = True

    def write_frames(self, images: Iterable[Any]) -> None:
        for img in images:
            self.write_frame(img)

    def clean_frames(self) -> None:
        """Deletes the frames this manager wrote."""
        for fn in os.listdir(self.frame_directory):
            if fn.endswith(".png") and fn in self.frame_fns:
                os.remove(os.path.join(self.frame_directory, fn))

    def make_video(self, mp4: bool = True, gif: bool = True) -> None:
        """Makes <name>.mp4 and/or <name>.gif of the frames written so far (see get_output_filename)."""
        mp4_path = self.get_output_filename(".mp4")
        gif_path = self.get_output_filename(".gif")
        ffmpeg = shutil.which("ffmpeg")
        if ffmpeg is None:
            self._make_without_ffmpeg(mp4, gif, gif_path)
            return
        if not (mp4 or gif):
            return
        frames = os.path.join(self.frame_directory, FRAME_FN_TEMPLATE)
        _run([ffmpeg, "-loglevel", "panic", "-framerate", str(self.framerate), "-i", frames,
              "-s:v", f"{self.width}x{self.height}", "-c:v", "libx264", "-profile:v", "high", "-crf", "1",
              "-pix_fmt", "yuv420p", "-y", mp4_path])
        if gif:
            palette = os.path.join(self.directory, "palette.png")
            _run([ffmpeg, "-loglevel", "panic", "-i", mp4_path, "-vf",
                  f"fps={self.framerate},scale=320:640:flags=lanczos,palettegen", "-y", palette])
            _run([ffmpeg, "-loglevel", "panic", "-i", mp4_path, "-i", palette, "-lavfi", "paletteuse", "-y",
                  gif_path])
            os.remove(palette)
        if not mp4:
            os.remove(mp4_path)

    def _make_without_ffmpeg(self, mp4: bool, gif: bool, gif_path: str) -> None:
        missing = [".mp4"] if mp4 else []
        wrote = ""
        if gif:
            try:
                if self._write_gif_with_pillow(gif_path):
                    wrote = f"; the .gif was written to {gif_path} with Pillow"
            except ImportError:
                missing.append(".gif (or Pillow: pip install pillow)")
        if missing:
            raise FFmpegNotFoundError(
                f"VideoManager.make_video: the {' and the '.join(missing)} needs ffmpeg on PATH, and there is "
                f"none; the {self.frame_counter} frames are PNG files in {self.frame_directory}{wrote}")

    def _write_gif_with_pillow(self, gif_path: str) -> bool:
        import PIL.Image
        names = sorted(fn for fn in os.listdir(self.frame_directory) if fn in self.frame_fns)
        if not names:
            return False
        images = [PIL.Image.fromarray(_rgb_rows(read_png(os.path.join(self.frame_directory, fn))))
                  for fn in names]
        images[0].save(gif_path, save_all=True, append_images=images[1:], loop=0,
                       duration=max(1, round(1000 / self.framerate)))
        return True


def _rgb_rows(rows: np.ndarray) -> np.ndarray:
    if rows.shape[2] <= 2:
        return np.repeat(rows[..., :1], 3, axis=2)
    return np.ascontiguousarray(rows[..., :3])


def _run(command: list[str]) -> None:
    result = subprocess.run(command, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise RuntimeError(f"VideoManager.make_video: ffmpeg failed (exit status {result.returncode}): "
                           + " ".join(command))


__all__ = ["FFmpegNotFoundError", "VideoManager"]
