// sm90/stmatrix.cuh: stmatrix (sm_90), a warp's 8 x 8 matrices of 16-bit elements from registers
// to shared memory, the store-side twin of ldmatrix (ptx_sm80.cuh).
#pragma once

// stmatrix.sync.aligned.m8n8.x4.shared.b16: a warp stores four 8 x 8 matrices of 16-bit
// elements. Register i of lane l holds row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 of matrix
// i (the accumulator fragment of mma and wgmma, packed to 16 bits); lane l gives the shared
// address of row l % 8 of matrix l / 8 (16 bytes, 16-byte aligned).
__device__ __forceinline__ void stmatrix_x4(unsigned int addr, unsigned int r0, unsigned int r1,
                                            unsigned int r2, unsigned int r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr),
                 "r"(r0), "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
}
