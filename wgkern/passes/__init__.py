"""IR -> IR transforms, one per module (typecheck, simplify, offload, autodiff/, ...); pipeline.py orders them.

Importing this package loads nothing: import the pass modules (or `wgkern.passes.pipeline`) directly."""
