// wgmma_operands.cuh: the accumulator operands of a wgmma.mma_async asm statement. Inline
// asm names every register of the accumulator, 4 to 128 of them; these lists are written here
// once for sm90/wgmma.cuh and sm90/wgmma_fp8.cuh. ROOFLINE_WG_REGS_N is the PTX text of
// operands %0 .. %N-1 (a thread's N accumulators come first), ROOFLINE_WG_ACC_N the matching
// "+f" operands d[0] .. d[N-1] of an array d in scope.
#pragma once

#define ROOFLINE_WG_R0_3 "%0, %1, %2, %3"
#define ROOFLINE_WG_R4_7 "%4, %5, %6, %7"
#define ROOFLINE_WG_R8 "%8, %9, %10, %11, %12, %13, %14, %15"
#define ROOFLINE_WG_R16 "%16, %17, %18, %19, %20, %21, %22, %23"
#define ROOFLINE_WG_R24 "%24, %25, %26, %27, %28, %29, %30, %31"
#define ROOFLINE_WG_R32 "%32, %33, %34, %35, %36, %37, %38, %39"
#define ROOFLINE_WG_R40 "%40, %41, %42, %43, %44, %45, %46, %47"
#define ROOFLINE_WG_R48 "%48, %49, %50, %51, %52, %53, %54, %55"
#define ROOFLINE_WG_R56 "%56, %57, %58, %59, %60, %61, %62, %63"
#define ROOFLINE_WG_R64 "%64, %65, %66, %67, %68, %69, %70, %71"
#define ROOFLINE_WG_R72 "%72, %73, %74, %75, %76, %77, %78, %79"
#define ROOFLINE_WG_R80 "%80, %81, %82, %83, %84, %85, %86, %87"
#define ROOFLINE_WG_R88 "%88, %89, %90, %91, %92, %93, %94, %95"
#define ROOFLINE_WG_R96 "%96, %97, %98, %99, %100, %101, %102, %103"
#define ROOFLINE_WG_R104 "%104, %105, %106, %107, %108, %109, %110, %111"
#define ROOFLINE_WG_R112 "%112, %113, %114, %115, %116, %117, %118, %119"
#define ROOFLINE_WG_R120 "%120, %121, %122, %123, %124, %125, %126, %127"

#define ROOFLINE_WG_REGS_4 ROOFLINE_WG_R0_3
#define ROOFLINE_WG_REGS_8 ROOFLINE_WG_REGS_4 ", " ROOFLINE_WG_R4_7
#define ROOFLINE_WG_REGS_16 ROOFLINE_WG_REGS_8 ", " ROOFLINE_WG_R8
#define ROOFLINE_WG_REGS_32 ROOFLINE_WG_REGS_16 ", " ROOFLINE_WG_R16 ", " ROOFLINE_WG_R24
#define ROOFLINE_WG_REGS_64 \
    ROOFLINE_WG_REGS_32 ", " ROOFLINE_WG_R32 ", " ROOFLINE_WG_R40 ", " ROOFLINE_WG_R48 ", " \
    ROOFLINE_WG_R56
#define ROOFLINE_WG_REGS_80 ROOFLINE_WG_REGS_64 ", " ROOFLINE_WG_R64 ", " ROOFLINE_WG_R72
#define ROOFLINE_WG_REGS_88 ROOFLINE_WG_REGS_80 ", " ROOFLINE_WG_R80
#define ROOFLINE_WG_REGS_96 ROOFLINE_WG_REGS_88 ", " ROOFLINE_WG_R88
#define ROOFLINE_WG_REGS_112 ROOFLINE_WG_REGS_96 ", " ROOFLINE_WG_R96 ", " ROOFLINE_WG_R104
#define ROOFLINE_WG_REGS_128 ROOFLINE_WG_REGS_112 ", " ROOFLINE_WG_R112 ", " ROOFLINE_WG_R120

#define ROOFLINE_WG_D4(i) "+f"(d[(i)]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3])
#define ROOFLINE_WG_D8(i) ROOFLINE_WG_D4(i), ROOFLINE_WG_D4((i) + 4)
#define ROOFLINE_WG_ACC_4 ROOFLINE_WG_D4(0)
#define ROOFLINE_WG_ACC_8 ROOFLINE_WG_D8(0)
#define ROOFLINE_WG_ACC_16 ROOFLINE_WG_ACC_8, ROOFLINE_WG_D8(8)
#define ROOFLINE_WG_ACC_32 ROOFLINE_WG_ACC_16, ROOFLINE_WG_D8(16), ROOFLINE_WG_D8(24)
#define ROOFLINE_WG_ACC_64 \
    ROOFLINE_WG_ACC_32, ROOFLINE_WG_D8(32), ROOFLINE_WG_D8(40), ROOFLINE_WG_D8(48), \
    ROOFLINE_WG_D8(56)
#define ROOFLINE_WG_ACC_80 ROOFLINE_WG_ACC_64, ROOFLINE_WG_D8(64), ROOFLINE_WG_D8(72)
#define ROOFLINE_WG_ACC_88 ROOFLINE_WG_ACC_80, ROOFLINE_WG_D8(80)
#define ROOFLINE_WG_ACC_96 ROOFLINE_WG_ACC_88, ROOFLINE_WG_D8(88)
#define ROOFLINE_WG_ACC_112 ROOFLINE_WG_ACC_96, ROOFLINE_WG_D8(96), ROOFLINE_WG_D8(104)
#define ROOFLINE_WG_ACC_128 ROOFLINE_WG_ACC_112, ROOFLINE_WG_D8(112), ROOFLINE_WG_D8(120)
