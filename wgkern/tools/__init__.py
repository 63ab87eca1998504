"""`wk.tools`: what Taichi's ti.tools gives programs, under the same names: images (image.py: imread, imwrite,
imresize, imshow), frame sequences and videos (video.py: VideoManager), PLY meshes and point clouds
(np2ply.py: PLYWriter) and VTK grids (vtk.py: write_vtk). wgkern imports this package on first use of wk.tools."""
from __future__ import annotations

from wgkern.tools import image, np2ply, video, vtk
from wgkern.tools.image import imread, imresize, imshow, imwrite
from wgkern.tools.np2ply import PLYWriter
from wgkern.tools.video import VideoManager
from wgkern.tools.vtk import write_vtk

__all__ = ["PLYWriter", "VideoManager", "image", "imread", "imresize", "imshow", "imwrite", "np2ply", "video",
           "vtk", "write_vtk"]
