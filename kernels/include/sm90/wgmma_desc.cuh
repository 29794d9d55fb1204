// sm90/wgmma_desc.cuh: the 64-bit shared-memory matrix descriptors through which wgmma reads its
// operands (PTX ISA "Matrix Descriptor Format"), for the 128-byte swizzled tiles TMA writes.
#pragma once

// The swizzle modes of a descriptor's top two bits.
enum class WgmmaSwizzle : unsigned int { none = 0, b128 = 1, b64 = 2, b32 = 3 };
// The shared-memory matrix descriptor of wgmma (PTX ISA "Matrix Descriptor Format"): start
// address, leading- and stride-dimension byte offsets (each in 16-byte units), base offset 0 (the
// tile aligned to its swizzle pattern) and the swizzle mode.
__device__ __forceinline__ unsigned long long smem_desc(unsigned int addr, unsigned int lbo_bytes,
                                                        unsigned int sbo_bytes,
                                                        WgmmaSwizzle swizzle) {
    return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) |
           (static_cast<unsigned long long>(lbo_bytes >> 4) << 16) |
           (static_cast<unsigned long long>(sbo_bytes >> 4) << 32) |
           (static_cast<unsigned long long>(swizzle) << 62);
}
// The descriptor of a K-major tile with 128-byte rows (64 16-bit elements), 128-byte swizzled,
// 8-row groups 1024 bytes apart, the tile 1024-byte aligned: the layout TMA writes with
// CU_TENSOR_MAP_SWIZZLE_128B. The leading byte offset is unused for swizzled K-major (16 bytes).
__device__ __forceinline__ unsigned long long smem_desc_k_sw128(unsigned int addr) {
    return smem_desc(addr, 16, 1024, WgmmaSwizzle::b128);
}
// The descriptor of an MN-major ("transposed", imm-trans = 1) tile, 128-byte swizzled: one
// 128-byte row per k holding 64 consecutive 16-bit elements of M or N, chunk c of row k at
// c ^ (k % 8) (what TMA writes for a box of 64 columns of a row-major K x N matrix with
// CU_TENSOR_MAP_SWIZZLE_128B); 8-row swizzle atoms (8 k x 64 n, 1024 bytes) stacked along K
// 1024 bytes apart, and the next 64 elements of M or N `mn_block_bytes` further (the next box).
// What the two offsets mean for an MN-major swizzled operand, from
//   * CuTe, cute/atom/mma_traits_sm90_gmma.hpp, make_gmma_desc<Major::MN>: in 16-byte units the
//     canonical SW128 layout is ((8,n),(8,k)):((1,LBO),(8,SBO)), i.e. 8 units (64 elements)
//     contiguous along MN, then the next 64 along MN at LBO; 8 k rows 128 bytes apart, then
//     the next 8 k at SBO;
//   * the PTX ISA's leading-dimension-stride table (written out in the tcgen05 section,
//     "Major-ness supported by Strides"; wgmma's "Shared Memory Matrix Layout" has the same
//     8x8-unit MN-major SW128 atom): MN-major, swizzled: "stride from the first
//     (swizzle-byte-size/16) rows to the next (swizzle-byte-size/16) rows", i.e. 128/16 = 8
//     16-byte units along MN;
// so   LBO = from one 64-element block of M/N to the next (here: the next TMA box),
//      SBO = from one group of 8 k rows to the next (1024 bytes: one swizzle atom).
// K-major is the other way round (SBO = the 8-row step along M/N, LBO unused). Base offset 0:
// the tile starts on a 1024-byte boundary and each k16 step advances 2048 bytes.
// A layout probe in benchmarks/ (check_wgmma_layout.py) tests these fields on one tile.
__device__ __forceinline__ unsigned long long smem_desc_mn_sw128(unsigned int addr,
                                                                 unsigned int mn_block_bytes) {
    return smem_desc(addr, mn_block_bytes, 1024, WgmmaSwizzle::b128);
}
// The descriptor of the same layout `bytes` further on: the start address is the low 14 bits in
// 16-byte units, so while the tile stays in the 256 KiB the field spans (all of shared memory) the
// add never carries out of it (nor out of the low word, whose upper half is the LBO field). A loop can keep one descriptor per operand and add
// constants, where rebuilding it from the address costs a mask, a shift and the ORs every time.
__device__ __forceinline__ unsigned long long smem_desc_add(unsigned long long desc,
                                                            unsigned int bytes) {
    // a 32-bit add on the low word (the high word, SBO and swizzle, passes through untouched)
    const unsigned int lo = static_cast<unsigned int>(desc) + (bytes >> 4);
    return (desc & 0xFFFFFFFF00000000ull) | lo;
}
