"""Taichi's ti.tools.PLYWriter: numpy arrays (or fields) per vertex and per face written as a PLY file, in
binary (the machine's byte order) or ASCII, in the same bytes as Taichi's writer. Channels are kept in the order
they are added; a channel with several columns becomes key_1, key_2, ..."""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

# PLY property types and the numpy types their values are stored as
PLY_TYPES = {"char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16, "int": np.int32,
             "uint": np.uint32, "float": np.float32, "double": np.float64}
VERTICES_PER_FACE = {"tri": 3, "quad": 4}


class Channel:
    """One PLY property: its name, PLY type and one value per vertex (or face)."""

    def __init__(self, key: str, ply_type: str, values: np.ndarray):
        self.key = key
        self.ply_type = ply_type
        self.values = values


class PLYWriter:
    """A PLY file of `num_vertices` vertices and `num_faces` faces of `face_type` 'tri' or 'quad'."""

    def __init__(self, num_vertices: int, num_faces: int = 0, face_type: str = "tri",
                 comment: str = "created by PLYWriter"):
        if num_vertices <= 0:
            raise ValueError(f"PLYWriter: num_vertices must be greater than 0, not {num_vertices!r}")
        if num_faces < 0:
            raise ValueError(f"PLYWriter: num_faces must not be negative, not {num_faces!r}")
        if face_type not in VERTICES_PER_FACE:
            raise ValueError(f"PLYWriter: face_type must be 'tri' or 'quad', not {face_type!r}")
        self.num_vertices = int(num_vertices)
        self.num_faces = int(num_faces)
        self.face_type = face_type
        self.comment = comment
        self.vertex_channels: list[Channel] = []
        self.face_channels: list[Channel] = []
        self.face_indices = -np.ones((self.num_faces, VERTICES_PER_FACE[face_type]), np.int32)

    # ---- vertex channels -----------------------------------------------------------------------------------
    def add_vertex_channel(self, key: str, data_type: str, data: Any) -> None:
        """A vertex property `key` of PLY type `data_type` ('char', ..., 'float', 'double'): data of shape (n,),
        or (n, k) for k properties key_1 ... key_k. An unknown type is reported and the channel skipped, as in
        Taichi."""
        _add_channel(self.vertex_channels, self.num_vertices, "vertex", key, data_type, data)

    def add_vertex_pos(self, x: Any, y: Any, z: Any) -> None:
        self._add_floats(("x", "y", "z"), (x, y, z))

    def add_vertex_normal(self, nx: Any, ny: Any, nz: Any) -> None:
        self._add_floats(("nx", "ny", "nz"), (nx, ny, nz))

    def add_vertex_vel(self, vx: Any, vy: Any, vz: Any) -> None:
        self._add_floats(("vx", "vy", "vz"), (vx, vy, vz))

    def add_vertex_color(self, r: Any, g: Any, b: Any) -> None:
        """Colours as floats in [0, 1]."""
        self._add_floats(("red", "green", "blue"), (r, g, b))

    def add_vertex_alpha(self, alpha: Any) -> None:
        self._add_floats(("Alpha",), (alpha,))

    def add_vertex_rgba(self, r: Any, g: Any, b: Any, a: Any) -> None:
        self._add_floats(("red", "green", "blue", "Alpha"), (r, g, b, a))

    def add_vertex_id(self) -> None:
        """An 'id' channel: each vertex's index."""
        self.add_vertex_channel("id", "int", np.arange(self.num_vertices))

    def add_vertex_piece(self, piece: Any) -> None:
        self.add_vertex_channel("piece", "int", piece)

    def _add_floats(self, keys: tuple[str, ...], columns: tuple[Any, ...]) -> None:
        for key, column in zip(keys, columns):
            self.add_vertex_channel(key, "float", column)

    # ---- faces -----------------------------------------------------------------------------------------------
    def add_faces(self, indices: Any) -> None:
        """The vertex indices of every face: num_faces * (3 or 4) integers, in any shape."""
        indices = _as_array(indices)
        per_face = VERTICES_PER_FACE[self.face_type]
        if indices.size != per_face * self.num_faces:
            raise ValueError(f"PLYWriter.add_faces: indices has {indices.size} values; {self.num_faces} "
                             f"{self.face_type} faces need {per_face * self.num_faces}")
        self.face_indices = indices.reshape(self.num_faces, per_face).astype(np.int32)

    def add_face_channel(self, key: str, data_type: str, data: Any) -> None:
        """A face property, as add_vertex_channel."""
        _add_channel(self.face_channels, self.num_faces, "face", key, data_type, data)

    def add_face_id(self) -> None:
        self.add_face_channel("id", "int", np.arange(self.num_faces))

    def add_face_piece(self, piece: Any) -> None:
        self.add_face_channel("piece", "int", piece)

    # ---- export ------------------------------------------------------------------------------------------
    def sanity_check(self) -> None:
        """Raises ValueError when a position channel is missing or a face index is not a vertex."""
        keys = {channel.key for channel in self.vertex_channels}
        missing = [axis for axis in ("x", "y", "z") if axis not in keys]
        if missing:
            raise ValueError(f"PLYWriter: the vertex position channel {', '.join(missing)} is missing "
                             "(add_vertex_pos)")
        if self.num_faces and (self.face_indices.min() < 0 or self.face_indices.max() >= self.num_vertices):
            raise ValueError(f"PLYWriter: face indices must lie in [0, {self.num_vertices}) (add_faces)")

    def header(self, file_format: str) -> str:
        """The PLY header for 'ascii' or 'binary_little_endian' / 'binary_big_endian'."""
        lines = ["ply", f"format {file_format} 1.0", f"comment {self.comment}",
                 f"element vertex {self.num_vertices}"]
        lines += [f"property {channel.ply_type} {channel.key}" for channel in self.vertex_channels]
        if self.num_faces:
            lines += [f"element face {self.num_faces}", "property list uchar int vertex_indices"]
            lines += [f"property {channel.ply_type} {channel.key}" for channel in self.face_channels]
        return "\n".join(lines + ["end_header"]) + "\n"

    def export(self, path: str) -> None:
        """Binary PLY in this machine's byte order, as Taichi writes it."""
        self.sanity_check()
        vertices = _records(self.vertex_channels, self.num_vertices, [])
        per_face = self.face_indices.shape[1]
        leading = [("count", np.uint8, np.uint8(per_face)), ("indices", (np.int32, per_face), self.face_indices)]
        faces = _records(self.face_channels, self.num_faces, leading)
        with open(path, "wb") as f:
            f.write(self.header(f"binary_{sys.byteorder}_endian").encode())
            f.write(vertices.tobytes())
            if self.num_faces:
                f.write(faces.tobytes())

    def export_ascii(self, path: str) -> None:
        """ASCII PLY: values as numpy prints them, each followed by a space, one vertex or face a line."""
        self.sanity_check()
        vertex_columns = [[str(value) for value in channel.values] for channel in self.vertex_channels]
        lines = ["".join(f"{column[i]} " for column in vertex_columns) for i in range(self.num_vertices)]
        face_columns = [[str(value) for value in channel.values] for channel in self.face_channels]
        per_face = self.face_indices.shape[1]
        for i in range(self.num_faces):
            indices = " ".join(str(index) for index in self.face_indices[i])
            lines.append(f"{per_face} {indices} " + "".join(f"{column[i]} " for column in face_columns))
        with open(path, "w", newline="\n") as f:
            f.write(self.header("ascii") + "".join(line + "\n" for line in lines))

    def export_frame(self, series_num: int, path: str) -> None:
        """export() to <path without .ply>_<series_num, 6 digits>.ply."""
        self.export(_frame_path(series_num, path))

    def export_frame_ascii(self, series_num: int, path: str) -> None:
        self.export_ascii(_frame_path(series_num, path))


def _as_array(data: Any) -> np.ndarray:
    return np.asarray(data.to_numpy() if hasattr(data, "to_numpy") else data)


def _add_channel(channels: list[Channel], count: int, element: str, key: str, data_type: str, data: Any) -> None:
    if data_type not in PLY_TYPES:
        print(f"PLYWriter: unknown PLY type {data_type!r} for the {element} channel {key!r}, skipping it "
              f"(types: {', '.join(PLY_TYPES)})", file=sys.stderr)
        return
    data = _as_array(data)
    if data.ndim == 1 and data.size == count:
        columns = [(key, data)]
    elif data.ndim == 2 and data.size and data.size % count == 0:    # read as (count, k), as Taichi does
        data = data.reshape(count, -1)
        columns = [(f"{key}_{i + 1}", data[:, i]) for i in range(data.shape[1])]
    else:
        raise ValueError(f"PLYWriter: the {element} channel {key!r} has data of shape {data.shape}; it needs "
                         f"({count},) or ({count}, k), one row per {element}")
    for name, column in columns:
        if any(channel.key == name for channel in channels):
            print(f"PLYWriter: the {element} channel {name!r} is added twice", file=sys.stderr)
        channels.append(Channel(name, data_type, column.astype(PLY_TYPES[data_type])))


def _records(channels: list[Channel], count: int, leading: list[tuple[str, Any, Any]]) -> np.ndarray:
    """One packed record per element: the leading fields, then each channel's value (native byte order)."""
    fields = [(name, dtype) for name, dtype, _ in leading]
    fields += [(f"channel{j}", channel.values.dtype) for j, channel in enumerate(channels)]
    records = np.zeros(count, np.dtype(fields))
    for name, _, values in leading:
        records[name] = values
    for j, channel in enumerate(channels):
        records[f"channel{j}"] = channel.values
    return records


def _frame_path(series_num: int, path: str) -> str:
    if path.endswith(".ply"):
        path = path[:-4]
    return f"{path}_{series_num:0=6d}.ply"


__all__ = ["PLYWriter"]
