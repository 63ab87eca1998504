"""Random differentiable programs checked against float64 finite differences and across arches
(`python -m wgkern fuzz`): generator.py writes a program's source from a seed, runner.py runs it and compares,
tolerance.py holds the error bounds, cli.py the command line."""
