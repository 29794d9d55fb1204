// sm89/mma_fp8.cuh: warp-level MMA on 8-bit floating-point inputs (mma.sync m16n8k32 .row.col
// .f32.e4m3.e4m3, sm_89 and later): one 16 x 8 x 32 tile per warp from registers, f32 results.
// -DFP8_E5M2=1 selects the e5m2 form; otherwise e4m3. Fragments as in the PTX ISA (lane = 4g + t):
//   a[0] = A[g][4t .. 4t+3], a[1] = A[g+8][4t ..], a[2] = A[g][16+4t ..], a[3] = A[g+8][16+4t ..]
//   b[0] = B[4t .. 4t+3][g] (column g, K-contiguous), b[1] = B[16+4t ..][g]
//   d[0], d[1] = D[g][2t], D[g][2t+1]; d[2], d[3] = D[g+8][2t], D[g+8][2t+1]
// A dot product does not care in which order its K terms come, so a kernel may hand A and B the
// same permutation of K (e.g. 16 contiguous bytes per lane instead of 4).
#pragma once

#ifndef FP8_E5M2
#define FP8_E5M2 0
#endif

#if FP8_E5M2
#define ROOFLINE_MMA_FP8_M16N8K32 "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32"
#else
#define ROOFLINE_MMA_FP8_M16N8K32 "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"
#endif

// D = A * B + C with C given apart (zero, or a running sum): a pure function of its registers, so
// the compiler may issue it among the loads of the next fragments.
__device__ __forceinline__ void mma_fp8_m16n8k32(float (&d)[4], const unsigned int (&a)[4],
                                                 unsigned int b0, unsigned int b1,
                                                 const float (&c)[4]) {
    asm(ROOFLINE_MMA_FP8_M16N8K32 " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]),
          "f"(c[2]), "f"(c[3]));
}
