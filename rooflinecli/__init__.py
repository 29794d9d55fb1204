"""roofline: hand-written CUDA GEMM stages placed on the roofline of the GPU they run on."""

__version__ = "0.1.0"
