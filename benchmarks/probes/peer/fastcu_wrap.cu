// A C entry point around a public Hopper GEMM series (pranjalssh/fast.cu, MIT), so that
// benchmarks/probes/probe_peer.py can time its kernels with this tool's timer, interleaved with cuBLAS
// and our stages. Nothing of that project is committed here: its headers are exported from the
// public repository into .peer/fastcu/ (ignored; benchmarks/probes/peer/export_fastcu.sh) and reach
// nvcc through -I (benchmarks/probes/peer/build.sh).
// The series computes C = A * B^T with A M x K and B N x K, both K-contiguous, in bf16 with fp32
// accumulation; its kernels need M and N multiples of their 256 x 256 cluster tile.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda/barrier>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <vector>

typedef __nv_bfloat16 bf16;
#define CEIL_DIV(M, N) (((M) + (N) - 1) / (N))

// the series reports CUDA errors through this; a probe would rather see a code than exit
static int peer_error = 0;
static void peer_check(cudaError_t e, const char* file, int line) {
  if (e != cudaSuccess && !peer_error) {
    std::fprintf(stderr, "peer: %s at %s:%d\n", cudaGetErrorString(e), file, line);
    peer_error = static_cast<int>(e);
  }
}
#define cudaCheck(err) (peer_check(err, __FILE__, __LINE__))

#include "examples/matmul/matmul_11.cuh"
#include "examples/matmul/matmul_12.cuh"

extern "C" int peer_gemm(int kernel, int m, int n, int k, void* a, void* b, void* c) {
  if (kernel == 11) {
    runKernel11(m, n, k, static_cast<bf16*>(a), static_cast<bf16*>(b), static_cast<bf16*>(c),
                nullptr);
  } else if (kernel == 12) {
    runKernel12(m, n, k, static_cast<bf16*>(a), static_cast<bf16*>(b), static_cast<bf16*>(c),
                nullptr);
  } else {
    return -1;
  }
  return peer_error ? peer_error : static_cast<int>(cudaPeekAtLastError());
}
