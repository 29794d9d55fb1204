// gemm/simt_epilogue.cuh: the float4 epilogue of the warp-tiled SIMT stages (08-13): one thread's
// results to C = alpha * acc + beta * C, one 16-byte store per 4 columns in interior tiles,
// element by element at the edge. beta == 0 never reads C: BLAS semantics, and C may hold NaN.
#pragma once

// Whether p is 16-byte aligned: float4 (LDG.128 / STG.128) accesses through it are legal.
__device__ __forceinline__ bool aligned16(const void* p) {
    return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0;
}

// A thread of a bm x bn block tile at (cRow, cCol) holds wmiter x wniter sub-tiles of tm x tn
// results: sub-tile (wm, wn) is acc[wm * tm + i][wn * tn + j] and lies at row
// cRow + wRow + wm * wsubm + tRow + i, column cCol + wCol + wn * wsubn + tCol + j of C (wRow,
// wCol: its warp's tile in the block tile; tRow, tCol: its lane's sub-tile in a warp sub-tile).
template <int bm, int bn, int wmiter, int wniter, int tm, int tn, int wsubm, int wsubn, int rm,
          int rn>
__device__ __forceinline__ void store_warp_tile(const float (&acc)[rm][rn], float* C, int M, int N,
                                                float alpha, float beta, int cRow, int cCol,
                                                int wRow, int wCol, int tRow, int tCol) {
    static_assert(tn % 4 == 0, "C rows are written as float4");
    const bool vecC = cRow + bm <= M && cCol + bn <= N && (N & 3) == 0 && aligned16(C);
#pragma unroll
    for (int wm = 0; wm < wmiter; ++wm) {
#pragma unroll
        for (int i = 0; i < tm; ++i) {
            const int row = cRow + wRow + wm * wsubm + tRow + i;
#pragma unroll
            for (int wn = 0; wn < wniter; ++wn) {
#pragma unroll
                for (int j = 0; j < tn; j += 4) {
                    const int col = cCol + wCol + wn * wsubn + tCol + j;
                    const float* a = &acc[wm * tm + i][wn * tn + j];
                    float* p = C + (size_t)row * N + col;
                    if (vecC) {  // interior tile, aligned rows: one 16-byte store
                        float4 out =
                            make_float4(alpha * a[0], alpha * a[1], alpha * a[2], alpha * a[3]);
                        if (beta != 0.0f) {
                            const float4 old = *reinterpret_cast<const float4*>(p);
                            out.x = fmaf(beta, old.x, out.x);
                            out.y = fmaf(beta, old.y, out.y);
                            out.z = fmaf(beta, old.z, out.z);
                            out.w = fmaf(beta, old.w, out.w);
                        }
                        *reinterpret_cast<float4*>(p) = out;
                    } else if (row < M) {  // edge tile: element by element, inside C only
#pragma unroll
                        for (int jj = 0; jj < 4; ++jj)
                            if (col + jj < N)
                                p[jj] = beta == 0.0f ? alpha * a[jj]
                                                     : fmaf(beta, p[jj], alpha * a[jj]);
                    }
                }
            }
        }
    }
}
