//===- Error.cpp - Thread-local error state of libtprt --------------------===//
//
// The last-error message, the name of the running entry point, and the names
// of the status codes.
//
//===----------------------------------------------------------------------===//

#include "Error.h"

#include <cstdarg>
#include <cstdio>
#include <string>

using namespace tprt;

namespace {
thread_local std::string lastError;
thread_local const char *currentApi = nullptr;
} // namespace

ApiScope::ApiScope(const char *name) : previous(currentApi) {
  currentApi = name;
}

ApiScope::~ApiScope() { currentApi = previous; }

tprt_status tprt::fail(tprt_status code, const char *format, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  try {
    lastError.clear();
    if (currentApi) {
      lastError += currentApi;
      lastError += ": ";
    }
    lastError += buffer;
  } catch (...) {
    // Keep whatever fitted; the status code is what matters.
  }
  return code;
}

tprt_status tprt::checkNotNull(
    std::initializer_list<std::pair<const char *, const void *>> args) {
  for (const auto &[name, pointer] : args)
    if (!pointer)
      return fail(TPRT_ERROR_INVALID_ARGUMENT, "%s is null", name);
  return TPRT_OK;
}

tprt_status tprt::checkGemmOperands(const void *a, const void *b,
                                    const void *c, int64_t m, int64_t n,
                                    int64_t k) {
  if (!a && m > 0 && k > 0)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "a is null");
  if (!b && k > 0 && n > 0)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "b is null");
  if (!c && m > 0 && n > 0)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "c is null");
  return TPRT_OK;
}

extern "C" TPRT_API const char *tprt_last_error(void) {
  return lastError.c_str();
}

extern "C" TPRT_API const char *tprt_status_name(tprt_status status) {
  switch (status) {
  case TPRT_OK:
    return "TPRT_OK";
  case TPRT_ERROR_INVALID_ARGUMENT:
    return "TPRT_ERROR_INVALID_ARGUMENT";
  case TPRT_ERROR_BACKEND:
    return "TPRT_ERROR_BACKEND";
  case TPRT_ERROR_UNAVAILABLE:
    return "TPRT_ERROR_UNAVAILABLE";
  case TPRT_ERROR_MISMATCH:
    return "TPRT_ERROR_MISMATCH";
  case TPRT_ERROR_OUT_OF_MEMORY:
    return "TPRT_ERROR_OUT_OF_MEMORY";
  case TPRT_ERROR_TIMEOUT:
    return "TPRT_ERROR_TIMEOUT";
  case TPRT_ERROR_INTERNAL:
    return "TPRT_ERROR_INTERNAL";
  }
  return "TPRT_ERROR_UNKNOWN";
}
