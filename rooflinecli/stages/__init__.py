"""The stages: the GEMM and attention registries, compiling them, their SASS and resources, and
the dispatch behind --stages best."""
