// gemm/shift16.cuh: 16 bytes that start on any element, from the two aligned 16-byte pieces that
// hold them. A row whose pitch is no multiple of 16 bytes (N = 6150 halves) still streams with
// 16-byte loads: load the piece at or below the row's address and the next, then shift.
#pragma once

// The 16 bytes at byte `off` (0..15; a multiple of the element's size) of the 32 bytes lo:hi.
// Words are picked by two selects on off / 4 and joined by a funnel shift by off % 4 bytes: 16
// integer instructions, no local memory. A row's pieces share one off, so no warp diverges.
__device__ __forceinline__ uint4 shift16(const uint4& lo, const uint4& hi, unsigned off) {
    const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    const unsigned q = off >> 2, sh = (off & 3u) * 8u;
    unsigned a[7], v[5];
#pragma unroll
    for (int i = 0; i < 7; ++i) a[i] = (q & 1u) ? w[i + 1] : w[i];
#pragma unroll
    for (int i = 0; i < 5; ++i) v[i] = (q & 2u) ? a[i + 2] : a[i];
    return make_uint4(__funnelshift_r(v[0], v[1], sh), __funnelshift_r(v[1], v[2], sh),
                      __funnelshift_r(v[2], v[3], sh), __funnelshift_r(v[3], v[4], sh));
}

// The aligned piece at or below element `p` (its first 16-byte load) and p's offset in it.
template <typename T>
__device__ __forceinline__ const uint4* piece_below(const T* p, unsigned& off) {
    const unsigned long long a = reinterpret_cast<unsigned long long>(p);
    off = static_cast<unsigned>(a & 15ull);
    return reinterpret_cast<const uint4*>(a & ~15ull);
}
