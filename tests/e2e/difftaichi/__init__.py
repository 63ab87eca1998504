"""difftaichi's examples and Taichi's autodiff examples, shortened, run with `import wgkern as ti`.

Each port keeps the Taichi API its original exercises (dense placement with `lazy_grad`, `ti.ad.Tape`, template
kernels, `ti.static` unrolling, time-step loops in Python, custom gradients, host element access) and shrinks
sizes and step counts. Every port checks that its Tape gradients match central finite differences of the same
program (in f64 where the device has it) and that a few steps of the original's optimiser lower the loss."""
