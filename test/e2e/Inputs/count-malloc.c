/* A shim for LD_PRELOAD (tests only): counts the process's allocations
 * (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign; C++'s
 * operator new calls malloc) and writes the count to $COUNT_MALLOC_FILE at
 * exit. Each forwards to glibc's own allocator. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static unsigned long count;

static void counted(void) { __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED); }

void *malloc(size_t n) { counted(); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { counted(); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { counted(); return __libc_realloc(p, n); }
void *memalign(size_t a, size_t n) { counted(); return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { counted(); return __libc_memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
  counted();
  void *p = __libc_memalign(a, n);
  if (!p && n)
    return 12; /* ENOMEM */
  *out = p;
  return 0;
}

__attribute__((destructor)) static void report(void) {
  unsigned long n = count;
  const char *file = getenv("COUNT_MALLOC_FILE");
  if (!file)
    return;
  FILE *out = fopen(file, "w");
  if (out) {
    fprintf(out, "%lu\n", n);
    fclose(out);
  }
}
