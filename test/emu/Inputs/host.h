// Host side of a differential test (ops.cu): the same computation compiled
// for the host, with the buffers filled and printed as tprt-emu-run fills
// and prints them, so that `diff` compares the emulated PTX with the C
// semantics of the same source.
#pragma once
#include <cstdio>
#include <cstring>
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

inline void printInts(int k, const int *v, int n) {
  std::printf("buffer %d:", k);
  for (int i = 0; i < n; ++i)
    std::printf(" %d", v[i]);
  std::printf("\n");
}
inline void printLongs(int k, const i64 *v, int n) {
  std::printf("buffer %d:", k);
  for (int i = 0; i < n; ++i)
    std::printf(" %lld", v[i]);
  std::printf("\n");
}
inline void printFloats(int k, const float *v, int n) {
  std::printf("buffer %d:", k);
  for (int i = 0; i < n; ++i)
    std::printf(" %.9g", double(v[i]));
  std::printf("\n");
}
inline void printDoubles(int k, const double *v, int n) {
  std::printf("buffer %d:", k);
  for (int i = 0; i < n; ++i)
    std::printf(" %.17g", v[i]);
  std::printf("\n");
}
