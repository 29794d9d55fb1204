// gemm/tile_order.cuh: the grouped tile orders of the persistent WGMMA stages (26-30). Tiles are
// numbered so that the tiles in flight together share few rows of A and columns of B in L2:
// group_m tile rows are walked column by column (down a column of the group, then the next
// column), then the next group.
#pragma once

// Tile number -> origin (m0, n0) of its bm x bn block of C.
template <int bm, int bn, int group_m>
__device__ __forceinline__ void grouped_tile_origin(int tile, int grid_m, int grid_n, int& m0,
                                                    int& n0) {
    const int per_group = group_m * grid_n;
    const int group = tile / per_group, first_m = group * group_m;
    const int group_rows = min(grid_m - first_m, group_m);
    const int in_group = tile - group * per_group;
    m0 = (first_m + in_group % group_rows) * bm;
    n0 = (in_group / group_rows) * bn;
}

// Cluster tile number -> origin of block `rank`'s bm x bn block of C. Cluster tiles are
// (cluster_m * bm) x bn blocks in grouped order, group_c cluster rows at a time; rank r of the
// cluster takes row tile cluster_m * (cluster row) + r.
template <int bm, int bn, int group_c, int cluster_m>
__device__ __forceinline__ void grouped_cluster_origin(int tile, int grid_cm, int grid_n, int rank,
                                                       int& m0, int& n0) {
    const int per_group = group_c * grid_n;
    const int group = tile / per_group, first_m = group * group_c;
    const int group_rows = min(grid_cm - first_m, group_c);
    const int in_group = tile - group * per_group;
    m0 = ((first_m + in_group % group_rows) * cluster_m + rank) * bm;
    n0 = (in_group / group_rows) * bn;
}
