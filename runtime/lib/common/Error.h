//===- Error.h - Thread-local error state of libtprt ------------*- C++ -*-===//
//
// Every C entry point opens an ApiScope naming itself; fail() formats a
// message, prefixes it with that name ("tprt_all_gather: ...") and stores it
// as the thread's last error. guard() keeps C++ exceptions from crossing the
// C boundary.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_COMMON_ERROR_H
#define TPRT_COMMON_ERROR_H

#include "tprt/tprt.h"

#include <exception>
#include <initializer_list>
#include <new>
#include <utility>

namespace tprt {

/// Names the C entry point running on this thread for the messages of fail().
class ApiScope {
public:
  explicit ApiScope(const char *name);
  ~ApiScope();
  ApiScope(const ApiScope &) = delete;
  ApiScope &operator=(const ApiScope &) = delete;

private:
  const char *previous;
};

/// Sets the thread's last error to "<entry point>: <formatted message>" and
/// returns `code`.
tprt_status fail(tprt_status code, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/// Fails with "<name> is null" for the first null pointer of the (name,
/// pointer) pairs, in order; TPRT_OK when none is null.
tprt_status
checkNotNull(std::initializer_list<std::pair<const char *, const void *>> args);

/// Fails with "a is null", "b is null" or "c is null" for the first of the
/// GEMM operands A (m x k), B (k x n) and C (m x n) that is null while it has
/// elements; TPRT_OK when none is (the check of tprt_gemm and its variants).
tprt_status checkGemmOperands(const void *a, const void *b, const void *c,
                              int64_t m, int64_t n, int64_t k);

/// Runs `body` and turns escaping exceptions into status codes.
template <typename Body> tprt_status guard(Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(TPRT_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return fail(TPRT_ERROR_INTERNAL, "internal error: %s", e.what());
  } catch (...) {
    return fail(TPRT_ERROR_INTERNAL, "internal error: unknown exception");
  }
}

} // namespace tprt

#endif // TPRT_COMMON_ERROR_H
